// The SQL console: one statement at a time through the API's query endpoint (its timeout
// and row cap apply), the rows in a grid, the engine's own error message when it refuses.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, TableScroll } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

type QueryResult = paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/query']['post']['responses'][200]['content']['application/json'];

export function SqlConsole({ db, path }: DatabaseTabProps) {
  const { client } = useSession();
  const [sql, setSql] = useState('');
  const [result, setResult] = useState<QueryResult | null>(null);
  const query = useMutation((statement: string) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/query', { params: { path }, body: { sql: statement } })),
  );
  const run = async () => {
    if (!sql.trim()) return;
    setResult(null);
    const answer = await query.run(sql);
    if (answer) setResult(answer.value);
  };
  return (
    <div class="panel">
      <h2>SQL console</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void run();
        }}
      >
        <label for="sql-statement">SQL statement</label>
        <textarea
          id="sql-statement"
          class="sql"
          spellcheck={false}
          aria-describedby="sql-hint"
          value={sql}
          onInput={(e) => setSql(e.currentTarget.value)}
          onKeyDown={(e) => {
            // Ctrl/Cmd+Enter runs it, as in most SQL consoles; Enter alone is a new line.
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void run();
            }
          }}
        />
        <p id="sql-hint" class="hint">
          One statement, run as the database’s own user ({db.engine === 'postgresql' ? 'PostgreSQL' : 'MySQL'}); it stops after a few seconds and returns at
          most the API’s row cap. Ctrl+Enter runs it.
        </p>
        <div class="actions">
          <button type="submit" class="primary" disabled={query.pending || !sql.trim()}>
            {query.pending ? 'Running…' : 'Run'}
          </button>
        </div>
      </form>
      <ErrorNote error={query.error} />
      {result && <ResultGrid result={result} />}
    </div>
  );
}

function cell(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

function ResultGrid({ result }: { result: QueryResult }) {
  return (
    <div>
      <p role="status">
        {result.command} · {result.row_count} row{result.row_count === 1 ? '' : 's'}
        {result.truncated ? ' (truncated at the row cap: add a LIMIT or a WHERE to see the rest)' : ''}
      </p>
      {result.columns.length > 0 && (
        <TableScroll label="Query results">
          <table>
            <caption class="sr-only">Query results</caption>
            <thead>
              <tr>
                {result.columns.map((c, i) => (
                  <th scope="col" key={i} title={c.type}>
                    {c.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((v, i) => (
                    <td key={i} class="grid-cell">
                      {v === null ? <span class="null">NULL</span> : cell(v)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </div>
  );
}
