// The backup schedule (Admins): cron in UTC, how many scheduled backups are kept, on/off,
// and when the next one runs. The API has no GET for it: `PATCH backups/schedule` with an
// empty body answers the schedule unchanged (services/databases README), so that is the read.
import { useEffect, useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, FormError, Loading, TextField, when } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

type ScheduleBody = { schedule?: string; retention_count?: number; enabled?: boolean };

export function BackupSchedule({ path }: Pick<DatabaseTabProps, 'path'>) {
  const { client } = useSession();
  const patch = (body: ScheduleBody) =>
    unwrap(client.PATCH('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/backups/schedule', { params: { path }, body }));
  const current = useQuery(`backup-schedule:${path.databaseID}`, () => patch({}));
  const save = useMutation(patch);
  const [cron, setCron] = useState('');
  const [retention, setRetention] = useState('');
  const [enabled, setEnabled] = useState(true);
  const s = current.data;
  useEffect(() => {
    if (!s) return;
    setCron(s.schedule);
    setRetention(String(s.retention_count));
    setEnabled(s.enabled);
  }, [s?.schedule, s?.retention_count, s?.enabled]);
  const err = save.error;
  return (
    <div class="panel">
      <h2>Backup schedule</h2>
      <ErrorNote error={current.error} />
      {!s ? (
        current.loading && <Loading what="the schedule" />
      ) : (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            await save.run({ schedule: cron.trim(), retention_count: Number(retention), enabled });
          }}
        >
          <p role="status">{s.enabled ? `Next scheduled backup: ${when(s.next_run_at)}.` : 'Scheduled backups are off.'}</p>
          <div class="form-grid">
            <TextField
              name="schedule"
              id="schedule-cron"
              label="Schedule (cron, UTC)"
              error={err}
              input={{ required: true, maxLength: 200 }}
              value={cron}
              onInput={setCron}
            />
            <TextField
              name="retention_count"
              id="schedule-retention"
              label="Scheduled backups kept (1–100)"
              error={err}
              input={{ required: true }}
              value={retention}
              onInput={setRetention}
            />
          </div>
          <label class="check">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
            Take scheduled backups
          </label>
          <FormError error={err} fields={['schedule', 'retention_count']} />
          <div class="actions">
            <button type="submit" class="primary" disabled={save.pending}>
              {save.pending ? 'Saving…' : 'Save schedule'}
            </button>
          </div>
        </form>
      )}
    </div>
  );
}
