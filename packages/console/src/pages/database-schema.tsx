// The schema browser: the API's tables with their columns, primary key and indexes, one
// disclosure per table (native <details>, so keyboard and screen readers need nothing more).
import { unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading, DataTable } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

export function SchemaBrowser({ path }: DatabaseTabProps) {
  const { client } = useSession();
  const schema = useQuery(`schema:${path.databaseID}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/schema', { params: { path } })),
  );
  const tables = schema.data?.tables ?? [];
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Schema</h2>
        <button type="button" onClick={schema.refetch} disabled={schema.loading}>
          Refresh
        </button>
      </div>
      <ErrorNote error={schema.error} />
      {schema.loading && !schema.data ? (
        <Loading what="the schema" />
      ) : !schema.data ? null : tables.length === 0 ? (
        <p>No tables yet. Create one in the SQL console.</p>
      ) : (
        tables.map((t) => (
          <details key={`${t.schema}.${t.name}`} data-table={`${t.schema}.${t.name}`}>
            <summary>
              <code>
                {t.schema}.{t.name}
              </code>{' '}
              <span class="muted">
                {t.columns.length} column{t.columns.length === 1 ? '' : 's'}
              </span>
            </summary>
            <DataTable label={`Columns of ${t.schema}.${t.name}`} caption={`Columns of ${t.schema}.${t.name}`} columns={['Column', 'Type', 'Null', 'Default']}>
              {t.columns.map((c) => (
                <tr key={c.name}>
                  <td>
                    <code>{c.name}</code>
                    {t.primary_key.includes(c.name) ? <span class="muted"> (primary key)</span> : null}
                  </td>
                  <td>{c.type}</td>
                  <td>{c.nullable ? 'yes' : 'no'}</td>
                  <td class="wrap">{c.default === null ? '—' : <code>{c.default}</code>}</td>
                </tr>
              ))}
            </DataTable>
            {t.indexes.length > 0 && (
              <>
                <h3>Indexes</h3>
                <ul>
                  {t.indexes.map((i) => (
                    <li key={i.name} class="wrap">
                      <code>{i.name}</code> ({i.columns.join(', ')}){i.primary ? ', primary' : i.unique ? ', unique' : ''}
                      <span class="muted"> {i.definition}</span>
                    </li>
                  ))}
                </ul>
              </>
            )}
          </details>
        ))
      )}
    </div>
  );
}
