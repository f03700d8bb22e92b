import { useState } from 'preact/hooks';
import { Fragment } from 'preact';
import { unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { CopyButton, ErrorNote, ListTable, Loading, StatusBadge, when } from '../ui.tsx';

const DATABASES_POLL_MS = 5000;

export function DatabasesPage() {
  const { client, workspaceId, vpcId } = useSession();
  const databases = useQuery(
    `databases:${workspaceId}:${vpcId}`,
    () =>
      unwrap(
        client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases', {
          params: { path: { workspaceID: workspaceId, vpcID: vpcId }, query: { limit: 200 } },
        }),
      ),
    DATABASES_POLL_MS,
  );
  return (
    <section aria-labelledby="databases-title">
      <h1 id="databases-title">Databases</h1>
      <ListTable
        query={databases}
        kind="database"
        what="databases"
        empty={
          <>
            No databases in this VPC yet. Create one with <code>pier db create</code>.
          </>
        }
        caption="Databases, refreshed every few seconds"
        columns={['Name', 'Status', 'Engine', 'Size', 'Replicas']}
        cells={(d) => (
          <>
            <td>
              <a href={`/databases/${encodeURIComponent(d.id)}`}>{d.name}</a>
            </td>
            <td>
              <StatusBadge status={d.status} />
            </td>
            <td>{engineOf(d)}</td>
            <td>
              {d.instance_type}, {d.storage_gb} GB
            </td>
            <td>{d.replicas}</td>
          </>
        )}
      />
    </section>
  );
}

function engineOf(d: { engine: string; postgres_version: string | null; mysql_version: string | null }): string {
  const version = d.engine === 'postgresql' ? d.postgres_version : d.mysql_version;
  return `${d.engine === 'postgresql' ? 'PostgreSQL' : 'MySQL'}${version ? ` ${version}` : ''}`;
}

export function DatabasePage({ id }: { id: string }) {
  const { client, workspaceId, vpcId } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId, databaseID: id };
  const database = useQuery(
    `database:${workspaceId}:${vpcId}:${id}`,
    () => unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}', { params: { path } })),
    DATABASES_POLL_MS,
  );
  const d = database.data;
  return (
    <section aria-labelledby="database-title">
      <p>
        <a href="/databases">← Databases</a>
      </p>
      <h1 id="database-title">{d?.name ?? 'Database'}</h1>
      <ErrorNote error={database.error} />
      {!d ? (
        database.loading && <Loading what="the database" />
      ) : (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={d.status} />
              {d.status_reason ? <span class="muted"> {d.status_reason}</span> : null}
            </dd>
            <dt>Engine</dt>
            <dd>{engineOf(d)}</dd>
            <dt>Size</dt>
            <dd>
              {d.instance_type}, {d.storage_gb} GB, {d.replicas} replica(s)
            </dd>
            <dt>External access</dt>
            <dd>{d.external_access_enabled ? 'on' : 'off'}</dd>
            <dt>Created</dt>
            <dd>{when(d.created_at)}</dd>
          </dl>
          {d.status === 'running' ? <Connection path={path} /> : <p class="muted">Connection details appear once the database is running.</p>}
        </>
      )}
    </section>
  );
}

/** The connection details: the password, and every URL holding it, hidden until revealed; each can be copied. */
function Connection({ path }: { path: { workspaceID: string; vpcID: string; databaseID: string } }) {
  const { client } = useSession();
  const [revealed, setRevealed] = useState(false);
  const conn = useQuery(`connection:${path.databaseID}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/connection', { params: { path } })),
  );
  const c = conn.data;
  const hide = (text: string) => (revealed || !c ? text : text.split(c.password).join('••••••••'));
  const rows: [string, string | number | null | undefined, boolean][] = c
    ? [
        ['Host', c.host, false],
        ['Port', c.port, false],
        ['Database', c.database, false],
        ['Username', c.username, false],
        ['Password', c.password, true],
        ['URL', c.database_url, true],
        ['Read-only URL', c.read_only_url, true],
        ['External URL', c.external_url, true],
        ['External read-only URL', c.external_url_ro, true],
        ['Pooler host', c.pooler_host, false],
      ]
    : [];
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Connection</h2>
        <button type="button" aria-pressed={revealed} onClick={() => setRevealed(!revealed)}>
          {revealed ? 'Hide password' : 'Reveal password'}
        </button>
      </div>
      <ErrorNote error={conn.error} />
      {!c ? (
        conn.loading && <Loading what="connection details" />
      ) : (
        <dl class="facts">
          {rows
            .filter(([, value]) => value !== null && value !== undefined)
            .map(([label, value, secret]) => (
              <Fragment key={label}>
                <dt>{label}</dt>
                <dd data-field={label}>
                  <code class="wrap">{secret ? hide(String(value)) : String(value)}</code>{' '}
                  <CopyButton text={String(value)} label={`Copy ${label.toLowerCase()}`} />
                </dd>
              </Fragment>
            ))}
        </dl>
      )}
    </div>
  );
}
