import { unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ListTable, StatusBadge } from '../ui.tsx';

/** How often the list reads status and replicas again (the page stays live without a reload). */
export const SERVICES_POLL_MS = 3000;

export function ServicesPage() {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const services = useQuery(
    `services:${workspaceId}:${vpcId}`,
    () =>
      unwrap(
        client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services', {
          params: { path: { workspaceID: workspaceId, vpcID: vpcId }, query: { limit: 200 } },
        }),
      ),
    SERVICES_POLL_MS,
  );
  return (
    <section aria-labelledby="services-title">
      <div class="panel-head">
        <h1 id="services-title">Services</h1>
        {canWrite && (
          <a class="button primary" href="/services/new">
            Create service
          </a>
        )}
      </div>
      <ListTable
        query={services}
        kind="service"
        what="services"
        empty={
          <>
            No services in this VPC yet. Create one {canWrite ? 'with the button above or ' : ''}with <code>pier services create</code>.
          </>
        }
        caption="Services, refreshed every few seconds"
        columns={['Name', 'Status', 'Replicas', 'Type', 'Image']}
        cells={(s) => (
          <>
            <td>
              <a href={`/services/${encodeURIComponent(s.id)}`}>{s.name}</a>
            </td>
            <td>
              <StatusBadge status={s.status} />
            </td>
            <td>
              {s.replicas.ready} / {s.replicas.desired} ready
            </td>
            <td>{s.service_type}</td>
            <td class="wrap">{s.image ?? '—'}</td>
          </>
        )}
      />
    </section>
  );
}
