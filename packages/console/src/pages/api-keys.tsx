import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { CopyButton, ErrorNote, ListTable, useConfirmedRemoval, when } from '../ui.tsx';

export function ApiKeysPage() {
  const { client, workspaceId, canWrite } = useSession();
  const path = { workspaceID: workspaceId };
  const keys = useQuery(`keys:${workspaceId}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path, query: { limit: 200 } } })),
  );
  const revoke = useConfirmedRemoval({
    verb: 'Revoke',
    noun: 'API key',
    warning: 'Anything using it is refused from now on; this cannot be undone.',
    remove: (keyID) => unwrap(client.DELETE('/api/v1/workspaces/{workspaceID}/api-keys/{keyID}', { params: { path: { ...path, keyID } } })),
  });
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <ListTable
        query={keys}
        kind="key"
        what="API keys"
        empty="No API keys in this workspace."
        columns={['Name', 'Prefix', 'Created', 'Last used', 'Expires']}
        actions={canWrite ? revoke.button : undefined}
        cells={(k) => (
          <>
            <td>{k.name}</td>
            <td>
              <code>{k.key_prefix}…</code>
            </td>
            <td>{when(k.created_at)}</td>
            <td>{when(k.last_used_at)}</td>
            <td>{k.expires_at ? when(k.expires_at) : 'never'}</td>
          </>
        )}
      />
      {canWrite && <CreateKey />}
      {revoke.dialog}
    </section>
  );
}

function CreateKey() {
  const { client, workspaceId } = useSession();
  const [name, setName] = useState('');
  const [days, setDays] = useState('');
  const [shown, setShown] = useState<{ name: string; key: string } | null>(null);
  const create = useMutation((body: { name: string; expires_in_days?: number }) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID: workspaceId } }, body })),
  );
  return (
    <div class="panel">
      <h2>Create an API key</h2>
      {shown && (
        <div class="once" role="status">
          <p>
            <strong>Copy the key {shown.name} now:</strong> it is shown this once and never again.
          </p>
          <div class="row">
            <label>
              New key
              <input readOnly value={shown.key} class="mono" onFocus={(e) => e.currentTarget.select()} />
            </label>
            <CopyButton text={shown.key} label="Copy key" />
            <button type="button" onClick={() => setShown(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          const key = (await create.run({ name: name.trim(), ...(days ? { expires_in_days: Number(days) } : {}) }))?.value;
          if (key?.key) {
            setShown({ name: key.name, key: key.key });
            setName('');
            setDays('');
          }
        }}
      >
        <label>
          Key name
          <input required maxLength={63} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Expires in days (empty: never)
          <input type="number" min={1} max={3650} value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={create.pending}>
          {create.pending ? 'Creating…' : 'Create key'}
        </button>
      </form>
      <ErrorNote error={create.error} />
    </div>
  );
}
