// The environment editor: rows of a name and either a plain value or a reference to a key
// of a secret (the contract's `secret_id` + `secret_key`). A referenced value is never on
// the page: the API never returns it, and the console only lists secrets' names and key
// names to choose from. Saving replaces the whole list, and the service rolls out with it.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

type PutBody = paths[`${typeof SERVICE}/env`]['put']['requestBody']['content']['application/json'];
type Variable = paths[`${typeof SERVICE}/env`]['get']['responses'][200]['content']['application/json']['variables'][number];

interface Row {
  id?: string;
  key: string;
  kind: 'value' | 'secret';
  value: string;
  secret_id: string;
  secret_key: string;
}

const blank = (): Row => ({ key: '', kind: 'value', value: '', secret_id: '', secret_key: '' });

function rowOf(v: Variable): Row {
  return 'secret_id' in v
    ? { id: v.id, key: v.key, kind: 'secret', value: '', secret_id: v.secret_id, secret_key: v.secret_key }
    : { id: v.id, key: v.key, kind: 'value', value: v.value, secret_id: '', secret_key: '' };
}

function entryOf(r: Row): PutBody['variables'][number] {
  const key = r.key.trim();
  return r.kind === 'secret' ? { key, secret_id: r.secret_id, secret_key: r.secret_key } : { key, value: r.value };
}

export function EnvSection({ service, path }: SectionProps) {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const env = useQuery(`env:${service.id}`, () => unwrap(client.GET(`${SERVICE}/env`, { params: { path } })));
  // Names and key names only: the list never carries a secret's values.
  const secrets = useQuery(`secrets:${workspaceId}:${vpcId}`, () =>
    unwrap(
      client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', {
        params: { path: { workspaceID: workspaceId, vpcID: vpcId }, query: { limit: 200 } },
      }),
    ),
  );
  const [rows, setRows] = useState<Row[] | null>(null);
  const [done, setDone] = useState('');
  const save = useMutation((variables: PutBody['variables']) => unwrap(client.PUT(`${SERVICE}/env`, { params: { path }, body: { variables } })));
  // The editor starts from what the API holds, and again after each save.
  const loaded = env.data?.variables;
  useEffect(() => {
    if (loaded && rows === null) setRows(loaded.map(rowOf));
  }, [loaded, rows]);

  const secretItems = secrets.data?.items ?? [];
  const secretName = (id: string) => secretItems.find((s) => s.id === id)?.name ?? id;
  const setRow = (i: number, patch: Partial<Row>) => setRows((rows ?? []).map((r, j) => (j === i ? { ...r, ...patch } : r)));

  return (
    <div class="panel" role="region" aria-labelledby="env-title">
      <h2 id="env-title">Environment</h2>
      <ErrorNote error={env.error} />
      {!loaded ? (
        env.loading && <Loading what="environment variables" />
      ) : !canWrite ? (
        loaded.length === 0 ? (
          <p class="muted">No environment variables.</p>
        ) : (
          <dl class="facts env-list">
            {loaded.map((v) => (
              <Fragment key={v.id}>
                <dt class="mono">{v.key}</dt>
                <dd class="wrap mono">{'secret_id' in v ? `from secret ${secretName(v.secret_id)}, key ${v.secret_key}` : v.value}</dd>
              </Fragment>
            ))}
          </dl>
        )
      ) : (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setDone('');
            const saved = (await save.run((rows ?? []).filter((r) => r.key.trim()).map(entryOf)))?.value;
            if (saved) {
              setRows(saved.variables.map(rowOf));
              setDone(saved.deployment ? 'Saved: the service rolls out with the new environment (the status above follows it).' : 'Saved.');
            }
          }}
        >
          <p class="hint">A secret reference reads its value from the secret when the service starts; the value is never shown here.</p>
          {(rows ?? []).map((r, i) => {
            const n = i + 1;
            const keys = secretItems.find((s) => s.id === r.secret_id)?.keys ?? [];
            return (
              <fieldset class="row env-row" key={i} data-env-row={r.key}>
                <legend class="sr-only">Variable {n}</legend>
                <label>
                  Name {n}
                  <input class="mono" value={r.key} autoComplete="off" spellcheck={false} onInput={(e) => setRow(i, { key: e.currentTarget.value })} />
                </label>
                <label>
                  Source {n}
                  <select value={r.kind} onChange={(e) => setRow(i, { kind: e.currentTarget.value as Row['kind'] })}>
                    <option value="value">Plain value</option>
                    <option value="secret">Secret reference</option>
                  </select>
                </label>
                {r.kind === 'value' ? (
                  <label>
                    Value {n}
                    <input class="mono" value={r.value} autoComplete="off" spellcheck={false} onInput={(e) => setRow(i, { value: e.currentTarget.value })} />
                  </label>
                ) : (
                  <>
                    <label>
                      Secret {n}
                      <select value={r.secret_id} onChange={(e) => setRow(i, { secret_id: e.currentTarget.value, secret_key: '' })}>
                        <option value="">Choose a secret</option>
                        {secretItems.map((s) => (
                          <option key={s.id} value={s.id}>
                            {s.name}
                          </option>
                        ))}
                      </select>
                    </label>
                    <label>
                      Secret key {n}
                      <select value={r.secret_key} onChange={(e) => setRow(i, { secret_key: e.currentTarget.value })}>
                        <option value="">Choose a key</option>
                        {keys.map((k) => (
                          <option key={k} value={k}>
                            {k}
                          </option>
                        ))}
                      </select>
                    </label>
                  </>
                )}
                <button type="button" aria-label={`Remove variable ${n}`} onClick={() => setRows((rows ?? []).filter((_, j) => j !== i))}>
                  Remove
                </button>
              </fieldset>
            );
          })}
          <div class="row">
            <button type="button" onClick={() => setRows([...(rows ?? []), blank()])}>
              Add a variable
            </button>
            <button type="submit" class="primary" disabled={save.pending}>
              {save.pending ? 'Saving…' : 'Save environment'}
            </button>
          </div>
          <ErrorNote error={save.error} />
          {done && (
            <p class="note" role="status">
              {done}
            </p>
          )}
        </form>
      )}
    </div>
  );
}
