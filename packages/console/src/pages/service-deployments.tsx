// The deployment history, newest first, with "Roll back" on each earlier deployment that
// ran (after a confirmation). A rollback is itself a new deployment at the top of the list.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ConfirmDialog, ListTable, StatusBadge, when } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

type Deployment = paths[`${typeof SERVICE}/deployments`]['get']['responses'][200]['content']['application/json']['items'][number];

/** Only a deployment whose image ran can be gone back to. */
const ROLLBACKABLE = new Set<Deployment['status']>(['succeeded', 'superseded']);

export function DeploymentsSection({ service, path }: SectionProps) {
  const { client, canWrite } = useSession();
  const deployments = useQuery(
    `deployments:${service.id}`,
    () => unwrap(client.GET(`${SERVICE}/deployments`, { params: { path, query: { limit: 20 } } })),
    5000,
  );
  const [target, setTarget] = useState<Deployment | null>(null);
  const [done, setDone] = useState('');
  const rollback = useMutation((deployment_id: string) => unwrap(client.POST(`${SERVICE}/rollback`, { params: { path }, body: { deployment_id } })));
  // ListTable marks each row with its `name`: a deployment's is its id.
  const rows = { ...deployments, data: deployments.data && { items: deployments.data.items.map((d) => ({ ...d, name: d.id })) } };
  return (
    <div class="panel" aria-labelledby="deployments-title" role="region">
      <h2 id="deployments-title">Deployments</h2>
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
      <ListTable
        query={rows}
        kind="deployment"
        what="deployments"
        empty="No deployment yet."
        caption="Deployments, newest first"
        columns={['Started', 'Why', 'Status', 'Image']}
        actions={
          canWrite
            ? (d) =>
                d.id !== service.current_deployment_id &&
                ROLLBACKABLE.has(d.status) && (
                  <button type="button" aria-label={`Roll back to ${d.image} of ${when(d.created_at)}`} onClick={() => setTarget(d)}>
                    Roll back
                  </button>
                )
            : undefined
        }
        cells={(d) => (
          <>
            <td>{when(d.created_at)}</td>
            <td>
              {d.reason}
              {d.id === service.current_deployment_id ? <strong> (current)</strong> : null}
            </td>
            <td>
              <StatusBadge status={d.status} />
              {d.message ? <span class="muted wrap"> {d.message}</span> : null}
            </td>
            <td class="wrap">{d.image}</td>
          </>
        )}
      />
      <ConfirmDialog
        open={target !== null}
        title="Roll back?"
        confirmLabel="Roll back"
        pending={rollback.pending}
        error={rollback.error}
        onCancel={() => {
          rollback.reset();
          setTarget(null);
        }}
        onConfirm={async () => {
          if (target && (await rollback.run(target.id))) {
            setDone(`Rolling back to ${target.image}: the status above follows it.`);
            setTarget(null);
          }
        }}
      >
        <p>
          Deploy <strong class="wrap">{target?.image}</strong> again, as it ran on {when(target?.created_at)}? The service rolls out to that image.
        </p>
      </ConfirmDialog>
    </div>
  );
}
