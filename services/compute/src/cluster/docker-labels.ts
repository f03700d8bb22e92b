// Labels tie every Docker object compute creates to its service and deployment, so the
// cluster itself answers "what runs for service X" in one filtered list, and anything
// Pier made can be found (and cleaned up) by `pier.managed=true`.
export const LABEL = {
  managed: 'pier.managed',
  kind: 'pier.kind',
  workspace: 'pier.workspace',
  vpc: 'pier.vpc',
  service: 'pier.service',
  serviceName: 'pier.service-name',
  deployment: 'pier.deployment',
  role: 'pier.role',
  replica: 'pier.replica',
  cronSchedule: 'pier.cron-schedule',
  /** On a cron run: the tick (ms since the epoch) it was started for. */
  cronDue: 'pier.cron-due',
} as const;

/** `pier.kind` of compute's objects (databases and secrets label theirs differently). */
export const KIND_SERVICE = 'service';

export type DockerRole = 'replica' | 'template' | 'run';

export function containerName(serviceName: string, deploymentId: string, suffix: string): string {
  return `pier-${serviceName}-${deploymentId.slice(0, 8)}-${suffix}`;
}

export function volumeName(serviceId: string): string {
  return `pier-disk-${serviceId}`;
}
