import { unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading, StatusBadge } from '../ui.tsx';

/** How often the list reads status and replicas again (the page stays live without a reload). */
export const SERVICES_POLL_MS = 3000;

export function ServicesPage() {
  const { client, workspaceId, vpcId } = useSession();
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
  const items = services.data?.items ?? [];
  return (
    <section aria-labelledby="services-title">
      <h1 id="services-title">Services</h1>
      <ErrorNote error={services.error} />
      {services.loading && !services.data ? (
        <Loading what="services" />
      ) : items.length === 0 ? (
        <p>
          No services in this VPC yet. Create one with <code>pier services create</code>.
        </p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Services, refreshed every few seconds</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Replicas</th>
                <th scope="col">Type</th>
                <th scope="col">Image</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.id} data-service={s.name}>
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
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
