// The events compute publishes (through the outbox, in the transaction of the change).
// Subjects: pier.events.<workspace>.<vpc>.<kind>.<service id>. Payloads carry ids, names
// and statuses — never an environment value.
import type { PierEvent } from '@pier/kit';
import type { Deployment, Service } from './records.ts';
import type { ServiceStatus } from './services/status.ts';
import type { Build } from './builds/build-store-port.ts';
import type { DiskBackup, DiskBackupSchedule, DiskRestore } from './disk-backups/disk-backup-store-port.ts';
import type { Hostname } from './hostnames/hostname-store-port.ts';
import type { MonitorSettings } from './uptime/uptime-store-port.ts';

/** What an event needs of its service: a removed domain claim has only this of it. */
type EventSubject = Pick<Service, 'id' | 'workspace_id' | 'vpc_id' | 'name'>;

function event(service: EventSubject, kind: string, data: Record<string, unknown>): PierEvent {
  return { kind, workspaceId: service.workspace_id, vpcId: service.vpc_id, resourceId: service.id, data: { name: service.name, ...data } };
}

/** What both shell events say of a session. */
export type ExecRecord = {
  session_id: string;
  user_id: string;
  replica: string;
  program: string;
  arg_count: number;
};

export const events = {
  created: (s: Service) => event(s, 'service.created', { status: s.status, service_type: s.service_type }),
  updated: (s: Service, fields: string[]) => event(s, 'service.updated', { fields }),
  // The platform's own: a read that refreshes a status writes it, but the reader did not change it.
  statusChanged: (s: Service, from: ServiceStatus, to: ServiceStatus, message: string | null) => ({
    ...event(s, 'service.status_changed', { from, to, message, deployment_id: s.current_deployment_id }),
    byPlatform: true,
  }),
  deploymentRequested: (s: Service, d: Deployment) =>
    event(s, 'service.deployment_requested', { deployment_id: d.id, reason: d.reason, image: d.image, rollback_of: d.rollback_of, status: d.status }),
  deploymentFinished: (s: Service, deploymentId: string, status: 'succeeded' | 'failed', message: string | null) => ({
    ...event(s, 'service.deployment_finished', { deployment_id: deploymentId, status, message }),
    byPlatform: true,
  }),
  envUpdated: (s: Service, keys: string[]) => event(s, 'service.env_updated', { keys }),
  slept: (s: Service, idleSeconds: number) => event(s, 'service.slept', { idle_seconds: idleSeconds }),
  woken: (s: Service, wakeMs: number, replicas: number) => event(s, 'service.woken', { wake_ms: wakeMs, replicas }),
  autoscaled: (s: Service, from: number, to: number, reason: string) => event(s, 'service.autoscaled', { from, to, reason }),
  deleted: (s: Service) => event(s, 'service.deleted', {}),
  /**
   * Who opened a shell where, running which program (the basename of argv[0]) with how many
   * arguments; never the arguments (people type secrets into command lines) nor what went
   * through it. `session_id` pairs the two events of a session.
   */
  execStarted: (s: Service, data: ExecRecord & { email: string | null; tty: boolean }) => event(s, 'service.exec.started', data),
  execEnded: (s: Service, data: ExecRecord & { duration_ms: number; exit_code: number | null; reason: string }) => event(s, 'service.exec.ended', data),
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
  /** Someone asked a running build to stop (the audit's record of who); `service.build.cancelled` follows once it has. */
  buildCancelRequested: (s: Service, b: Build) => event(s, 'service.build.cancel_requested', { build_id: b.id, source: b.source }),
  /** Uptime monitoring turned on, or its settings changed (`created`: it was off). */
  uptimeEnabled: (s: Service, settings: MonitorSettings, created: boolean) => event(s, 'service.uptime.enabled', { ...settings, created }),
  uptimeDisabled: (s: Service) => event(s, 'service.uptime.disabled', {}),
  /** Uptime checks found the service down: an incident opened (`incident_started_at`: its first failed check). */
  uptimeDown: (s: Service, data: { previous: string; path: string; reason: string; status_code: number | null; incident_started_at: string }) =>
    event(s, 'service.uptime.down', data),
  /** Uptime checks found the service up (again: `incident_started_at`, when it had been down, else null). */
  uptimeUp: (s: Service, data: { previous: string; path: string; status_code: number | null; latency_ms: number | null; incident_started_at: string | null }) =>
    event(s, 'service.uptime.up', data),
  /**
   * A custom domain was added, verified, became active, failed or was removed (detached); or an
   * unverified claim went: `expired` (never verified in time) or `lost` (another service's
   * claim on the hostname passed DNS verification).
   */
  domain: (s: EventSubject, what: 'added' | 'verified' | 'active' | 'failed' | 'removed' | 'expired' | 'lost', d: Hostname) =>
    event(s, `service.domain.${what}`, { domain_id: d.id, hostname: d.hostname, status: d.status, tls_status: d.tls_status, error: d.error }),
  /** A disk backup started, completed or failed. */
  diskBackup: (s: Service, b: DiskBackup) =>
    event(s, `service.backup.${b.status === 'running' ? 'started' : b.status}`, {
      backup_id: b.id,
      method: b.method,
      status: b.status,
      size_bytes: b.size_bytes,
      error: b.error,
    }),
  /** A disk backup left the store: pruned past its schedule's retention, or its service was deleted. */
  diskBackupDeleted: (s: Service, b: DiskBackup, reason: 'retention' | 'service_deleted') =>
    event(s, 'service.backup.deleted', { backup_id: b.id, method: b.method, reason }),
  /** A restore of the disk started (`restore_started`), finished (`restored`) or failed and was undone (`restore_failed`). */
  diskRestore: (s: Service, r: DiskRestore) =>
    event(s, `service.backup.${r.status === 'running' ? 'restore_started' : r.status === 'completed' ? 'restored' : 'restore_failed'}`, {
      restore_id: r.id,
      backup_id: r.backup_id,
      status: r.status,
      error: r.error,
    }),
  /** The backup schedule was set (`schedule`) or removed (null). */
  diskBackupSchedule: (s: Service, schedule: DiskBackupSchedule | null) =>
    schedule
      ? event(s, 'service.backup.schedule_set', {
          schedule: schedule.schedule,
          retention_count: schedule.retention_count,
          next_run_at: new Date(schedule.next_run_at).toISOString(),
        })
      : event(s, 'service.backup.schedule_deleted', {}),
};
