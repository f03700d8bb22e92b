import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { parseEnvFile, type EnvRow } from '../env-file.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, ListTable, useConfirmedRemoval, when } from '../ui.tsx';

export function SecretsPage() {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId };
  const secrets = useQuery(`secrets:${workspaceId}:${vpcId}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', { params: { path, query: { limit: 200 } } })),
  );
  const remove = useConfirmedRemoval({
    verb: 'Delete',
    noun: 'secret',
    warning: 'Services referencing it fail to deploy until it exists again.',
    remove: (secretID) =>
      unwrap(client.DELETE('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets/{secretID}', { params: { path: { ...path, secretID } } })),
  });
  return (
    <section aria-labelledby="secrets-title">
      <h1 id="secrets-title">Secrets</h1>
      <p class="muted">Values are write-only: Pier never shows them again, here or anywhere.</p>
      <ListTable
        query={secrets}
        kind="secret"
        what="secrets"
        empty="No secrets in this VPC yet."
        columns={['Name', 'Keys', 'Updated']}
        actions={canWrite ? remove.button : undefined}
        cells={(s) => (
          <>
            <td>{s.name}</td>
            <td class="wrap">{s.keys.join(', ')}</td>
            <td>{when(s.updated_at)}</td>
          </>
        )}
      />
      {canWrite && <CreateSecret />}
      {remove.dialog}
    </section>
  );
}

function CreateSecret() {
  const { client, workspaceId, vpcId } = useSession();
  const [name, setName] = useState('');
  const [rows, setRows] = useState<EnvRow[]>([{ key: '', value: '' }]);
  const [pasted, setPasted] = useState('');
  const [created, setCreated] = useState('');
  const create = useMutation((body: { name: string; values: Record<string, string> }) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', { params: { path: { workspaceID: workspaceId, vpcID: vpcId } }, body })),
  );
  const setRow = (i: number, row: Partial<EnvRow>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...row } : r)));
  return (
    <form
      class="panel"
      aria-labelledby="create-secret-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setCreated('');
        const values = Object.fromEntries(rows.filter((r) => r.key.trim()).map((r) => [r.key.trim(), r.value]));
        const secret = (await create.run({ name: name.trim(), values }))?.value;
        if (secret) {
          setCreated(`Created secret ${secret.name} with ${secret.keys.length} key(s).`);
          setName('');
          setRows([{ key: '', value: '' }]);
          setPasted('');
        }
      }}
    >
      <h2 id="create-secret-title">Create a secret</h2>
      <label>
        Name
        <input
          name="secret-name"
          required
          value={name}
          pattern="[a-z0-9]([a-z0-9\-]*[a-z0-9])?"
          title="Lowercase letters, digits and hyphens; starts and ends with a letter or digit"
          maxLength={63}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <fieldset>
        <legend>Keys and values</legend>
        {rows.map((r, i) => (
          <div class="row" key={i}>
            <label>
              Key {i + 1}
              <input value={r.key} autoComplete="off" spellcheck={false} onInput={(e) => setRow(i, { key: e.currentTarget.value })} />
            </label>
            <label>
              Value {i + 1}
              <input type="password" autoComplete="off" value={r.value} onInput={(e) => setRow(i, { value: e.currentTarget.value })} />
            </label>
            <button type="button" aria-label={`Remove row ${i + 1}`} disabled={rows.length === 1} onClick={() => setRows(rows.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => setRows([...rows, { key: '', value: '' }])}>
          Add a row
        </button>
      </fieldset>
      <details>
        <summary>Paste a .env file</summary>
        <label>
          .env contents
          <textarea rows={5} spellcheck={false} value={pasted} onInput={(e) => setPasted(e.currentTarget.value)} />
        </label>
        <button
          type="button"
          disabled={!pasted.trim()}
          onClick={() => {
            const parsed = parseEnvFile(pasted);
            const kept = rows.filter((r) => r.key.trim() && !parsed.some((p) => p.key === r.key.trim()));
            setRows([...kept, ...parsed].length ? [...kept, ...parsed] : [{ key: '', value: '' }]);
            setPasted('');
          }}
        >
          Use these lines
        </button>
      </details>
      <ErrorNote error={create.error} />
      {created && (
        <p class="note" role="status">
          {created}
        </p>
      )}
      <button type="submit" class="primary" disabled={create.pending}>
        {create.pending ? 'Creating…' : 'Create secret'}
      </button>
    </form>
  );
}
