// Backups: the list (read again while one runs), "Take a backup", and a restore into a new
// database — of a named backup, or (postgresql) to a point in time chosen inside the
// recovery window the API reports. A restore never touches the source (the contract), so
// it needs no confirmation; the new database's screen then shows its progress.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Field, FormError, ListTable, StatusBadge, TextField, useConfirmedRemoval, when } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';
import { BackupSchedule } from './database-backup-schedule.tsx';

type RestoreBody = NonNullable<
  paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups/restore']['post']['requestBody']
>['content']['application/json'];
type Window = { earliest: string; latest: string };

const RUNNING_POLL_MS = 3000;

function size(bytes: number | null): string {
  if (bytes === null) return '—';
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function Backups({ db, path }: DatabaseTabProps) {
  const { client, canWrite } = useSession();
  const [pollMs, setPollMs] = useState(0);
  const backups = useQuery(
    `backups:${path.databaseID}`,
    async () => {
      const page = await unwrap(
        client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups', { params: { path, query: { limit: 200 } } }),
      );
      return { ...page, items: page.items.map((b) => ({ ...b, id: b.name })) };
    },
    pollMs,
  );
  const running = backups.data?.items.some((b) => b.status === 'running') ?? false;
  if ((running ? RUNNING_POLL_MS : 0) !== pollMs) setPollMs(running ? RUNNING_POLL_MS : 0);
  const take = useMutation(() =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups', { params: { path }, body: {} })),
  );
  const completed = backups.data?.items.filter((b) => b.status === 'completed') ?? [];
  const remove = useConfirmedRemoval({
    verb: 'Delete',
    noun: 'backup',
    warning: 'It can no longer be restored.',
    remove: (name) =>
      unwrap(
        client.DELETE('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups/{backupName}', {
          params: { path: { ...path, backupName: name } },
        }),
      ),
  });
  return (
    <>
      <div class="panel">
        <div class="panel-head">
          <h2>Backups</h2>
          <div class="row">
            <button type="button" onClick={backups.refetch}>
              Refresh
            </button>
            {canWrite && (
              <button type="button" class="primary" disabled={take.pending || running || db.status !== 'running'} onClick={() => void take.run()}>
                {take.pending ? 'Starting…' : running ? 'Backup running…' : 'Take a backup'}
              </button>
            )}
          </div>
        </div>
        <ErrorNote error={take.error} />
        {backups.data?.recovery_window && (
          <p>
            Point-in-time recovery window: {when(backups.data.recovery_window.earliest)} to {when(backups.data.recovery_window.latest)}.
          </p>
        )}
        <ListTable
          query={backups}
          kind="backup"
          what="backups"
          empty="No backups yet."
          caption="Backups, newest first"
          columns={['Name', 'Status', 'Kind', 'Size', 'Started', 'Completed']}
          actions={canWrite ? (b) => b.status !== 'running' && remove.button(b) : undefined}
          cells={(b) => (
            <>
              <td class="wrap">
                <code>{b.name}</code>
              </td>
              <td>
                <StatusBadge status={b.status} />
                {b.error ? <span class="muted"> {b.error}</span> : null}
              </td>
              <td>{b.method}</td>
              <td>{size(b.size_bytes)}</td>
              <td>{when(b.started_at)}</td>
              <td>{when(b.completed_at)}</td>
            </>
          )}
        />
      </div>
      {remove.dialog}
      {canWrite && <Restore db={db} path={path} backups={completed.map((b) => b.name)} window={backups.data?.recovery_window ?? null} />}
      {canWrite && <BackupSchedule path={path} />}
    </>
  );
}

/** `<input type=datetime-local>` speaks local wall time without a zone; the API wants ISO with one. */
function toLocalInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function Restore({ db, path, backups, window }: DatabaseTabProps & { backups: string[]; window: Window | null }) {
  const { client } = useSession();
  const pitr = db.engine === 'postgresql';
  const [name, setName] = useState('');
  const [backup, setBackup] = useState('');
  const [time, setTime] = useState('');
  const restore = useMutation((body: RestoreBody) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups/restore', { params: { path }, body })),
  );
  const err = restore.error;
  // The seconds the window allows, in the picker's local terms; a restore outside them is
  // refused by the API anyway (its 400 names target_time and states the window).
  const min = window ? toLocalInput(window.earliest) : undefined;
  const max = window ? toLocalInput(window.latest) : undefined;
  const outside = time !== '' && ((min !== undefined && time < min) || (max !== undefined && time > max));
  return (
    <div class="panel">
      <h2>Restore into a new database</h2>
      <p class="hint">The source is never overwritten: a restore makes a new database in this VPC from the backup.</p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (outside) return;
          const body: RestoreBody = { name: name.trim() };
          if (backup) body.backup_name = backup;
          if (pitr && time) body.target_time = new Date(time).toISOString();
          const made = await restore.run(body);
          if (made) navigate(`/databases/${encodeURIComponent(made.value.id)}`);
        }}
      >
        <div class="form-grid">
          <TextField
            name="name"
            id="restore-name"
            label="New database name"
            error={err}
            input={{ required: true, maxLength: 19 }}
            value={name}
            onInput={setName}
          />
          <Field name="backup_name" id="restore-backup" label="Backup" error={err}>
            {(a) => (
              <select {...a} value={backup} onChange={(e) => setBackup(e.currentTarget.value)}>
                {pitr ? <option value="">The newest completed backup</option> : <option value="">Choose a backup</option>}
                {backups.map((b) => (
                  <option key={b} value={b}>
                    {b}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {pitr && (
            <Field
              name="target_time"
              id="restore-time"
              label="Point in time (optional)"
              error={err}
              problem={outside ? 'Outside the recovery window.' : undefined}
              hint={
                window
                  ? `Your local time, between ${when(window.earliest)} and ${when(window.latest)}. Empty: the end of the backup.`
                  : 'Nothing is recoverable to a point in time yet: the window opens once a backup has completed.'
              }
            >
              {(a) => (
                <input
                  {...a}
                  type="datetime-local"
                  step={1}
                  min={min}
                  max={max}
                  disabled={!window}
                  value={time}
                  onInput={(e) => setTime(e.currentTarget.value)}
                />
              )}
            </Field>
          )}
        </div>
        {!pitr && <p class="hint">MySQL restores a named backup: there is no point-in-time recovery.</p>}
        <FormError error={err} fields={['name', 'backup_name', 'target_time']} />
        <div class="actions">
          <button type="submit" class="primary" disabled={restore.pending || (!pitr && !backup)}>
            {restore.pending ? 'Restoring…' : 'Restore'}
          </button>
        </div>
      </form>
    </div>
  );
}
