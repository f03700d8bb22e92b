// The slow-query log: statements by mean time (the engine's statistics), and a reset for
// Admins, which clears them after a confirmation (the numbers cannot be had back).
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ConfirmDialog, ErrorNote, Loading, DataTable } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 0)} ms`;

export function SlowQueries({ path }: DatabaseTabProps) {
  const { client, canWrite } = useSession();
  const [confirming, setConfirming] = useState(false);
  const slow = useQuery(`slow:${path.databaseID}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/slow-queries', { params: { path, query: { limit: 50 } } })),
  );
  const reset = useMutation(() =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/slow-queries/reset', { params: { path } })),
  );
  const items = slow.data?.items ?? [];
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Slow queries</h2>
        <div class="row">
          <button type="button" onClick={slow.refetch} disabled={slow.loading}>
            Refresh
          </button>
          {canWrite && (
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Reset statistics
            </button>
          )}
        </div>
      </div>
      <ErrorNote error={slow.error} />
      {slow.loading && !slow.data ? (
        <Loading what="slow queries" />
      ) : !slow.data ? null : items.length === 0 ? (
        <p>No statements recorded since the last reset.</p>
      ) : (
        <DataTable label="Slow queries" caption="Statements by mean time, slowest first" columns={['Statement', 'Calls', 'Mean', 'Max', 'Total', 'Rows']}>
          {items.map((q, i) => (
            <tr key={i} data-slow-query>
              <td class="grid-cell">{q.query}</td>
              <td>{q.calls}</td>
              <td>{ms(q.mean_time_ms)}</td>
              <td>{ms(q.max_time_ms)}</td>
              <td>{ms(q.total_time_ms)}</td>
              <td>{q.rows}</td>
            </tr>
          ))}
        </DataTable>
      )}
      <ConfirmDialog
        open={confirming}
        title="Reset slow-query statistics?"
        confirmLabel="Reset statistics"
        pending={reset.pending}
        error={reset.error}
        onCancel={() => {
          reset.reset();
          setConfirming(false);
        }}
        onConfirm={async () => {
          if (await reset.run()) setConfirming(false);
        }}
      >
        <p>Every statement’s counts and timings are cleared for good.</p>
      </ConfirmDialog>
    </div>
  );
}
