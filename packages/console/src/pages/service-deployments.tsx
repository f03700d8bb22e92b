// The deployment history, newest first, with "Roll back" on each earlier deployment that
// ran (after a confirmation). A rollback is itself a new deployment at the top of the list.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ListTable, StatusBadge, useConfirmed, when } from '../ui.tsx';
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
  const [done, setDone] = useState('');
  const rollback = useConfirmed<Deployment>({
    title: 'Roll back?',
    confirmLabel: 'Roll back',
    run: (d) => unwrap(client.POST(`${SERVICE}/rollback`, { params: { path }, body: { deployment_id: d.id } })),
    onDone: (d) => setDone(`Rolling back to ${d.image}: the status above follows it.`),
    body: (d) => (
      <p>
        Deploy <strong class="wrap">{d?.image}</strong> again, as it ran on {when(d?.created_at)}? The service rolls out to that image.
      </p>
    ),
  });
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
                  <button type="button" aria-label={`Roll back to ${d.image} of ${when(d.created_at)}`} onClick={() => rollback.ask(d)}>
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
      {rollback.dialog}
    </div>
  );
}
