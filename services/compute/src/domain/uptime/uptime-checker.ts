// Uptime checks: background work on kit's Periodic. Every tick claims the checks that are
// due from the database (claiming moves each monitor's next check one interval on, and
// skips rows another compute is claiming), runs them at most `concurrency` at once, and
// records each result in one transaction with the state change, its incident and its event.
// Everything lives in the database, so a restarted compute carries on where the last one
// stopped; a check in flight when a process dies is simply lost (the next one is due one
// interval later).
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { Service } from '../records.ts';
import type { DueCheck } from './uptime-store-port.ts';
import { advance, INCIDENTS_KEPT, judge, type CheckResult } from './uptime-state.ts';
import { events } from '../events.ts';

type CheckerContext = Pick<ComputeContext, 'uptime' | 'eventsWritten' | 'now'>;

/** How often monitors of deleted services are ended and counts past retention dropped. */
const MAINTENANCE_EVERY_MS = 60_000;
const RETENTION_BATCH = 5_000;
const HOUR_MS = 3_600_000;

export class UptimeChecker {
  private readonly loop: Periodic;
  private readonly running = new Set<Promise<void>>();
  /** Slots promised to a claim still in flight, so two overlapping claims cannot exceed the limit. */
  private reserved = 0;
  private stopping = new AbortController();
  private lastMaintenance = 0;

  constructor(
    private readonly ctx: CheckerContext,
    private readonly log: Logger,
    tickMs: number,
  ) {
    this.loop = new Periodic(() => this.pass(), tickMs, { log, what: 'uptime check pass' });
  }

  start(): void {
    this.stopping = new AbortController();
    this.loop.start(() => this.pass());
  }

  /** Stops claiming; checks in flight are cut short and not recorded (they are no finding about the service). */
  async stop(): Promise<void> {
    await this.loop.stop();
    this.stopping.abort();
    await Promise.allSettled([...this.running]);
  }

  private async pass(): Promise<void> {
    const now = this.ctx.now();
    if (now.getTime() - this.lastMaintenance >= MAINTENANCE_EVERY_MS) {
      await this.maintain(now);
      this.lastMaintenance = now.getTime();
    }
    await this.startDue(now);
  }

  /** Runs the checks due at `now` (as many as the concurrency allows) and waits for their results; how many ran. */
  async runDue(now: Date): Promise<number> {
    const started = await this.startDue(now);
    await Promise.all(started);
    return started.length;
  }

  /** Ends the monitors of deleted services and drops hourly counts past retention, in batches. */
  async maintain(now: Date): Promise<void> {
    const { store, settings } = this.ctx.uptime;
    const ended = await store.endOrphans();
    if (ended) this.log.info({ monitors: ended }, 'ended the uptime monitors of deleted services');
    const cutoff = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - settings.retentionDays * 24 * HOUR_MS);
    // Batches keep each delete short, whatever a long pause left to delete.
    while ((await store.dropCountsBefore(cutoff, RETENTION_BATCH)) === RETENTION_BATCH);
  }

  private async startDue(now: Date): Promise<Promise<void>[]> {
    const free = this.ctx.uptime.settings.concurrency - this.running.size - this.reserved;
    if (free <= 0 || this.stopping.signal.aborted) return [];
    this.reserved += free;
    let due: DueCheck[];
    try {
      due = await this.ctx.uptime.store.claimDue(now, free);
    } finally {
      this.reserved -= free;
    }
    return due.map((d) => this.launch(d));
  }

  private launch(d: DueCheck): Promise<void> {
    const done: Promise<void> = this.check(d)
      .catch((err: unknown) => this.log.warn({ err: String(err), service: d.service.id }, 'an uptime check could not be recorded; the next one will be'))
      .finally(() => this.running.delete(done));
    this.running.add(done);
    return done;
  }

  private async check({ monitor, service }: DueCheck): Promise<void> {
    const at = this.ctx.now();
    const { signal } = this.stopping;
    const outcome = await this.ctx.uptime.probe.check(service, monitor.path, monitor.timeout_ms, signal);
    if (signal.aborted) return;
    await recordCheck(this.ctx, service, monitor.generation, judge(outcome, monitor, at));
  }
}

/**
 * One result, with everything it changes, in one transaction: the monitor's state, the
 * hour's counts and, when the state changes, the incident and the event (the outbox relay
 * publishes it).
 */
export async function recordCheck(ctx: CheckerContext, service: Service, generation: number, r: CheckResult): Promise<void> {
  const changed = await ctx.uptime.store.transaction(async (tx) => {
    const m = await tx.lockMonitor(service.id);
    // Disabled or re-enabled with other settings while the check ran: not this monitor's finding.
    if (!m || m.generation !== generation) return false;
    if (m.last_checked_at && new Date(m.last_checked_at) >= r.at) return false;
    const { state, transition } = advance(m, r);
    await tx.updateState(service.id, state);
    await tx.countCheck(service.id, r.at, r.ok);
    if (transition?.to === 'down') {
      const incident = await tx.openIncident(service.id, transition.incidentStartedAt, transition.reason, INCIDENTS_KEPT);
      await tx.writeEvent(
        events.uptimeDown(service, {
          previous: transition.from,
          path: m.path,
          reason: incident.reason,
          status_code: r.statusCode,
          incident_started_at: new Date(incident.started_at).toISOString(),
        }),
      );
    } else if (transition?.to === 'up') {
      const closed = await tx.closeIncident(service.id, r.at);
      await tx.writeEvent(
        events.uptimeUp(service, {
          previous: transition.from,
          path: m.path,
          status_code: r.statusCode,
          latency_ms: r.latencyMs,
          incident_started_at: closed ? new Date(closed.started_at).toISOString() : null,
        }),
      );
    }
    return transition !== null;
  });
  if (changed) ctx.eventsWritten();
}
