import { useState } from 'preact/hooks';
import { Fragment, type ComponentChildren } from 'preact';
import { unwrap, type paths } from '../api.ts';
import { useQuery } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { CopyButton, ErrorNote, ListTable, Loading, Progress, StatusBadge, ConfirmDialog, when } from '../ui.tsx';
import { SqlConsole } from './database-sql.tsx';
import { SchemaBrowser } from './database-schema.tsx';
import { SlowQueries } from './database-slow-queries.tsx';
import { Backups } from './database-backups.tsx';
import { Allowlist } from './database-allowlist.tsx';
import { EditDatabase } from './database-edit.tsx';
import { DatabaseSettings } from './database-settings.tsx';

const DATABASES_POLL_MS = 5000;

export function DatabasesPage() {
  const { client, workspaceId, vpcId, canWrite } = useSession();
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
      <div class="panel-head">
        <h1 id="databases-title">Databases</h1>
        {canWrite && (
          <a class="button primary" href="/databases/new">
            Create database
          </a>
        )}
      </div>
      <ListTable
        query={databases}
        kind="database"
        what="databases"
        empty={
          <>
            No databases in this VPC yet.{canWrite ? ' Create one with the button above, or with ' : ' Create one with '}
            <code>pier db create</code>.
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

/** What every tab of a database's screen works on. */
export interface DatabaseTabProps {
  db: Database;
  path: DbPath;
}
export type DbPath = { workspaceID: string; vpcID: string; databaseID: string };
export type Database = DatabaseRecord;
type DatabaseRecord = paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}']['get']['responses'][200]['content']['application/json'];

// The tabs of a database's screen, each its own file; `admin` ones need Owner or Admin
// (the API refuses schema and query to anyone else, so a Viewer is not shown them).
const TABS: { slug: string; label: string; admin: boolean; render: (p: DatabaseTabProps) => ComponentChildren }[] = [
  {
    slug: '',
    label: 'Connection',
    admin: false,
    render: ({ db, path }) =>
      db.status === 'running' ? <Connection path={path} /> : <p class="muted">Connection details appear once the database is running.</p>,
  },
  { slug: 'sql', label: 'SQL console', admin: true, render: (p) => <SqlConsole {...p} /> },
  { slug: 'schema', label: 'Schema', admin: true, render: (p) => <SchemaBrowser {...p} /> },
  { slug: 'slow-queries', label: 'Slow queries', admin: false, render: (p) => <SlowQueries {...p} /> },
  { slug: 'backups', label: 'Backups', admin: false, render: (p) => <Backups {...p} /> },
  { slug: 'allowlist', label: 'IP allowlist', admin: false, render: (p) => <Allowlist {...p} /> },
  { slug: 'settings', label: 'Replicas and fork', admin: true, render: (p) => <DatabaseSettings {...p} /> },
  { slug: 'edit', label: 'Edit', admin: true, render: (p) => <EditDatabase {...p} /> },
];

// Faster while it is being made: the person is watching it come up.
const CREATING_POLL_MS = 2000;

export function DatabasePage({ id, tab }: { id: string; tab: string }) {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId, databaseID: id };
  const [pollMs, setPollMs] = useState(DATABASES_POLL_MS);
  const database = useQuery(
    `database:${workspaceId}:${vpcId}:${id}`,
    () => unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}', { params: { path } })),
    pollMs,
  );
  const d = database.data;
  const busy = d?.status === 'creating' || d?.status === 'deleting';
  if ((busy ? CREATING_POLL_MS : DATABASES_POLL_MS) !== pollMs) setPollMs(busy ? CREATING_POLL_MS : DATABASES_POLL_MS);
  const tabs = TABS.filter((t) => canWrite || !t.admin);
  const current = tabs.find((t) => t.slug === tab);
  const base = `/databases/${encodeURIComponent(id)}`;
  return (
    <section aria-labelledby="database-title">
      <p>
        <a href="/databases">← Databases</a>
      </p>
      <div class="panel-head">
        <h1 id="database-title">{d?.name ?? 'Database'}</h1>
        {d && canWrite && d.status !== 'deleting' && <DeleteDatabase db={d} path={path} />}
      </div>
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
            {d.source && (
              <>
                <dt>Made from</dt>
                <dd class="wrap">
                  {d.source.kind} of {d.source.database_id}, backup {d.source.backup_name}
                  {d.source.target_time ? ` at ${when(d.source.target_time)}` : ''}
                </dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(d.created_at)}</dd>
          </dl>
          {d.status === 'creating' && <Progress label="Creating the database">Creating the database… it is usable once it reads running.</Progress>}
          {d.status === 'deleting' && <Progress label="Deleting the database">Deleting the database…</Progress>}
          {d.status === 'error' && (
            <p class="note note-error" role="alert">
              The database failed to start: {d.status_reason ?? 'the cluster gave no reason'}
            </p>
          )}
          <nav class="tabs" aria-label="Database sections">
            {tabs.map((t) => (
              <a key={t.slug} href={t.slug ? `${base}/${t.slug}` : base} aria-current={t === current ? 'page' : undefined}>
                {t.label}
              </a>
            ))}
          </nav>
          {!current ? (
            <p>
              No section named {tab}. <a href={base}>Connection</a>.
            </p>
          ) : current.slug === '' || current.slug === 'backups' || current.slug === 'allowlist' || d.status === 'running' ? (
            current.render({ db: d, path })
          ) : (
            <p class="muted">{current.label} open once the database is running.</p>
          )}
        </>
      )}
    </section>
  );
}

/** Deleting asks first: it takes the data with it (backups stay for the retention days). */
function DeleteDatabase({ db, path }: DatabaseTabProps) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  // Not useMutation: its re-read of every query on screen would ask this deleting database
  // for its connection (a 409). The screen leaves instead; the list shows it `deleting`.
  const confirm = async () => {
    setPending(true);
    setError(undefined);
    try {
      await unwrap(client.DELETE('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}', { params: { path } }));
      navigate('/databases');
    } catch (err) {
      setError(err);
      setPending(false);
    }
  };
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete database ${db.name}`} onClick={() => setOpen(true)}>
        Delete
      </button>
      <ConfirmDialog
        open={open}
        title="Delete database?"
        confirmLabel="Delete database"
        pending={pending}
        error={error}
        onCancel={() => {
          setError(undefined);
          setOpen(false);
        }}
        onConfirm={() => void confirm()}
      >
        <p>
          Delete <strong>{db.name}</strong>? Its data goes with it; its backups stay restorable for the retention days.
        </p>
      </ConfirmDialog>
    </>
  );
}

/** The connection details: the password, and every URL holding it, hidden until revealed; each can be copied. */
function Connection({ path }: { path: DbPath }) {
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
