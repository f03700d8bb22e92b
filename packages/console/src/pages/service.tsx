// A service's detail: its facts, then one section per thing a person does with it. Each
// section lives in its own file (service-*.tsx) and gets the same props; the page is the
// list below, so a section is added by one line.
import type { FunctionComponent } from 'preact';
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading, StatusBadge, when } from '../ui.tsx';
import { SERVICES_POLL_MS } from './services.tsx';
import { SERVICE, TRANSITIONAL, type SectionProps } from './service-types.ts';
import { ActionsSection } from './service-actions.tsx';
import { DeploymentsSection } from './service-deployments.tsx';
import { BuildsSection } from './service-builds.tsx';
import { EnvSection } from './service-env.tsx';
import { DomainsSection } from './service-domains.tsx';
import { UptimeSection } from './service-uptime.tsx';
import { BackupsSection } from './service-backups.tsx';
import { ShellSection } from './service-shell.tsx';
import { LogsSection } from './service-logs.tsx';
import { LogHistorySection } from './service-log-history.tsx';
import { ServiceMetrics } from './service-metrics.tsx';
import { DeleteService } from './service-delete.tsx';

interface Section {
  component: FunctionComponent<SectionProps>;
  /** Shown to Owners and Admins only (every control in it writes). */
  writes?: boolean;
}

const SECTIONS: Section[] = [
  { component: ActionsSection, writes: true },
  { component: ({ service }) => <ServiceMetrics serviceId={service.id} /> },
  { component: DeploymentsSection },
  { component: BuildsSection },
  { component: EnvSection },
  { component: DomainsSection },
  { component: UptimeSection },
  { component: BackupsSection },
  { component: ShellSection, writes: true },
  { component: LogsSection },
  { component: LogHistorySection },
];

export function ServicePage({ id }: { id: string }) {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId, serviceID: id };
  const service = useQuery(`service:${workspaceId}:${vpcId}:${id}`, () => unwrap(client.GET(SERVICE, { params: { path } })), SERVICES_POLL_MS);
  const s = service.data;
  // Deleted from this page: its sections go at once, before the next read says `deleting`.
  const [leaving, setLeaving] = useState(false);
  return (
    <section aria-labelledby="service-title">
      <p>
        <a href="/services">← Services</a>
      </p>
      <div class="panel-head">
        <h1 id="service-title">{s?.name ?? 'Service'}</h1>
        {s && canWrite && (
          <div class="actions">
            {s.status !== 'deleting' && (
              <a class="button" href={`/services/${encodeURIComponent(id)}/edit`} aria-label={`Edit service ${s.name}`}>
                Edit
              </a>
            )}
            <DeleteService service={s} path={path} onDeleting={() => setLeaving(true)} />
          </div>
        )}
      </div>
      <ErrorNote error={service.error} />
      {!s ? (
        service.loading && <Loading what="the service" />
      ) : (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={s.status} />
              {s.status_message ? <span class="muted"> {s.status_message}</span> : null}
            </dd>
            <dt>Replicas</dt>
            <dd>
              {s.replicas.ready} / {s.replicas.desired} ready
            </dd>
            <dt>Image</dt>
            <dd class="wrap">{s.image ?? '—'}</dd>
            <dt>Type</dt>
            <dd>
              {s.service_type}, {s.instance_type} ({s.resources.cpu} CPU, {s.resources.memory_mib} MiB), {s.deployment_mode}
            </dd>
            <dt>URL</dt>
            <dd class="wrap">{s.url ? <a href={s.url}>{s.url}</a> : '—'}</dd>
            <dt>Updated</dt>
            <dd>{when(s.updated_at)}</dd>
          </dl>
          {TRANSITIONAL.has(s.status) && (
            <p class="note progress-note" role="status">
              <progress aria-label={`${s.status}`} /> {s.status[0]!.toUpperCase() + s.status.slice(1)}: {s.replicas.ready} of {s.replicas.desired} replicas
              ready. This follows the service until it is {s.status === 'deleting' ? 'deleted' : 'running'}.
            </p>
          )}
          {/* A service being torn down has nothing left to show or do (and its sections' reads would fail). */}
          {!leaving &&
            s.status !== 'deleting' &&
            SECTIONS.filter((x) => canWrite || !x.writes).map(({ component: C }, i) => <C key={i} service={s} path={path} />)}
        </>
      )}
    </section>
  );
}
