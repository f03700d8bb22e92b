// The events compute publishes (through the outbox, in the transaction of the change).
// Subjects: pier.events.<workspace>.<vpc>.<kind>.<service id>. Payloads carry ids, names
// and statuses — never an environment value.
import type { PierEvent } from '@pier/kit';
import type { Deployment, Service } from './records.ts';
import type { ServiceStatus } from './status.ts';
import type { Build } from './build-store-port.ts';

function event(service: Service, kind: string, data: Record<string, unknown>): PierEvent {
  return { kind, workspaceId: service.workspace_id, vpcId: service.vpc_id, resourceId: service.id, data: { name: service.name, ...data } };
}

export const events = {
  created: (s: Service) => event(s, 'service.created', { status: s.status, service_type: s.service_type }),
  updated: (s: Service, fields: string[]) => event(s, 'service.updated', { fields }),
  statusChanged: (s: Service, from: ServiceStatus, to: ServiceStatus, message: string | null) =>
    event(s, 'service.status_changed', { from, to, message, deployment_id: s.current_deployment_id }),
  deploymentRequested: (s: Service, d: Deployment) =>
    event(s, 'service.deployment_requested', { deployment_id: d.id, reason: d.reason, image: d.image, rollback_of: d.rollback_of, status: d.status }),
  deploymentFinished: (s: Service, deploymentId: string, status: 'succeeded' | 'failed', message: string | null) =>
    event(s, 'service.deployment_finished', { deployment_id: deploymentId, status, message }),
  envUpdated: (s: Service, keys: string[]) => event(s, 'service.env_updated', { keys }),
  deleted: (s: Service) => event(s, 'service.deleted', {}),
  /** Who opened a shell where, running what; never what went through it. */
  execStarted: (s: Service, data: { user_id: string; email: string | null; replica: string; command: string[]; tty: boolean }) =>
    event(s, 'service.exec.started', data),
  execEnded: (s: Service, data: { user_id: string; replica: string; command: string[]; duration_ms: number; exit_code: number | null; reason: string }) =>
    event(s, 'service.exec.ended', data),
  /** A build changed state: queued, started, succeeded, failed or cancelled. */
  build: (s: Service, b: Build) =>
    event(s, `service.build.${b.status === 'running' ? 'started' : b.status}`, {
      build_id: b.id,
      source: b.source,
      status: b.status,
      commit_sha: b.commit_sha,
      image: b.image,
      deployment_id: b.deployment_id,
      error: b.error,
    }),
};
