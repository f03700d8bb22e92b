// Disk backups of a service with a persistent disk: the list (newest first) with the latest
// restore, "Back up now", restore one after a confirmation (the service is down meanwhile),
// and the schedule (a cron in UTC and how many scheduled backups are kept), set or removed.
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Field, fieldOf, ListTable, StatusBadge, useConfirmed, when } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

const BACKUPS = `${SERVICE}/backups` as const;

function size(bytes: number | null): string {
  if (bytes === null) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function BackupsSection({ service, path }: SectionProps) {
  const { client, canWrite } = useSession();
  const backups = useQuery(`backups:${service.id}`, () => unwrap(client.GET(BACKUPS, { params: { path, query: { limit: 20 } } })), 5000);
  const take = useMutation(() => unwrap(client.POST(BACKUPS, { params: { path } })));
  const restore = useConfirmed<{ id: string; created_at: string }>({
    title: 'Restore the disk?',
    confirmLabel: 'Restore',
    run: (b) => unwrap(client.POST(`${BACKUPS}/restore`, { params: { path }, body: { backup_id: b.id } })),
    body: (b) => (
      <p>
        Replace the disk's contents with the backup of <strong>{when(b?.created_at)}</strong>? The service is scaled down meanwhile and unavailable until it is
        back up; what was written since that backup is lost.
      </p>
    ),
  });
  if (service.disk_size_gb === null) return null;
  const data = backups.data;
  const rows = { ...backups, data: data && { items: data.items.map((b) => ({ ...b, name: b.id })) } };
  return (
    <div class="panel" role="region" aria-labelledby="backups-title">
      <div class="panel-head">
        <h2 id="backups-title">Disk backups</h2>
        {canWrite && (
          <button type="button" disabled={take.pending} onClick={() => void take.run()}>
            {take.pending ? 'Starting…' : 'Back up now'}
          </button>
        )}
      </div>
      <p class="muted">
        The {service.disk_size_gb} GB disk at {service.disk_mount_path ?? 'its mount path'}.
      </p>
      <ErrorNote error={take.error} />
      {data?.restore && (
        <p class="note" role="status">
          Latest restore (of the backup of {when(data.items.find((b) => b.id === data.restore!.backup_id)?.created_at ?? data.restore.created_at)}):{' '}
          <StatusBadge status={data.restore.status} />
          {data.restore.error ? ` ${data.restore.error}` : ''}
          {data.restore.finished_at ? `, finished ${when(data.restore.finished_at)}` : ''}
        </p>
      )}
      <ListTable
        query={rows}
        kind="backup"
        what="backups"
        empty="No backup yet."
        caption="Disk backups, newest first"
        columns={['Taken', 'How', 'Status', 'Size']}
        actions={
          canWrite
            ? (b) =>
                b.status === 'completed' && (
                  <button type="button" aria-label={`Restore the backup of ${when(b.created_at)}`} onClick={() => restore.ask(b)}>
                    Restore
                  </button>
                )
            : undefined
        }
        cells={(b) => (
          <>
            <td>{when(b.created_at)}</td>
            <td>{b.method}</td>
            <td>
              <StatusBadge status={b.status} />
              {b.error ? <span class="muted wrap"> {b.error}</span> : null}
            </td>
            <td>{size(b.size_bytes)}</td>
          </>
        )}
      />
      {data && <Schedule path={path} schedule={data.schedule} />}
      {restore.dialog}
    </div>
  );
}

type ScheduleState = { schedule: string; retention_count: number; next_run_at: string } | null;

function Schedule({ path, schedule }: { path: SectionProps['path']; schedule: ScheduleState }) {
  const { client, canWrite } = useSession();
  const [form, setForm] = useState({ schedule: '', retention_count: '' });
  const save = useMutation((body: { schedule: string; retention_count?: number }) => unwrap(client.PUT(`${BACKUPS}/schedule`, { params: { path }, body })));
  const remove = useMutation(() => unwrap(client.DELETE(`${BACKUPS}/schedule`, { params: { path } })));
  return (
    <div>
      <h3>Schedule</h3>
      <p>
        {schedule
          ? `${schedule.schedule} (UTC), keeping the last ${schedule.retention_count} scheduled backups; next at ${when(schedule.next_run_at)}.`
          : 'No schedule: backups are taken only by hand.'}
      </p>
      {canWrite && (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            const keep = form.retention_count.trim();
            if (await save.run({ schedule: form.schedule.trim(), retention_count: keep ? Number(keep) : undefined }))
              setForm({ schedule: '', retention_count: '' });
          }}
        >
          <Field name="schedule" label="Backup schedule" error={save.error} hint="Five-field cron or a macro such as @daily, in UTC.">
            {(a) => (
              <input
                {...a}
                value={form.schedule}
                placeholder={schedule?.schedule ?? '@daily'}
                required
                spellcheck={false}
                onInput={(e) => setForm({ ...form, schedule: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field name="retention_count" label="Backups kept" error={save.error} hint="1-100. Default: 7.">
            {(a) => (
              <input
                {...a}
                inputMode="numeric"
                value={form.retention_count}
                placeholder="7"
                onInput={(e) => setForm({ ...form, retention_count: e.currentTarget.value })}
              />
            )}
          </Field>
          <button type="submit" class="primary" disabled={save.pending}>
            {schedule ? 'Change schedule' : 'Set schedule'}
          </button>
          {schedule && (
            <button type="button" class="danger" disabled={remove.pending} onClick={() => void remove.run()}>
              Remove schedule
            </button>
          )}
        </form>
      )}
      <ErrorNote error={['schedule', 'retention_count'].includes(fieldOf(save.error) ?? '') ? remove.error : (save.error ?? remove.error)} />
    </div>
  );
}
