// The elastic controller: puts idle on_demand services to sleep, wakes them on the request
// that needs them, scales web services between their floor and max_replicas on the
// requests in flight the edge's activator counts (elastic-port.ts), and workers on the CPU
// their replicas use (worker-cpu.ts). The replica count it chose is the service's
// `desired_replicas`: written in the transaction of its event, read by every status refresh
// (targetOf) and applied by rollouts (specOf).
//
// - Sleep: an on_demand service with min_replicas 0, nothing in flight, no shell open and no
//   request for idle_timeout_seconds is drained and scaled to 0 (its containers stopped and
//   kept: starting them again is the fastest wake here).
// - Wake: the activator holds the request and calls wake(); the floor is started at once,
//   one wake per service however many requests wait.
// - Autoscale: wanted = ceil(peak in flight / target_concurrency), within floor..max. Up at
//   the next tick; down only after the load stayed below the current count for the
//   scale-down delay (PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS), replicas drained first.
// - Workers: wanted = ceil(current × average CPU use / target), read every CPU_SAMPLE_MS,
//   up and down as above. They take no requests, so they never sleep (on_demand is web only).
//   On kubernetes the HorizontalPodAutoscaler scales them (ElasticPort.scalesWorkers).
import { Periodic, type Logger, type PierEvent } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import { specOf } from '../context.ts';
import { events } from '../events.ts';
import type { Service } from '../records.ts';
import { isElastic, replicaFloor, type ServiceConfig } from '../services/service-config.ts';
import type { ElasticPort } from './elastic-port.ts';
import { CPU_SAMPLE_MS, percent, wantedForCpu } from './worker-cpu.ts';

export interface ElasticOptions {
  tickMs: number;
  /** How long the load must stay low before replicas are removed. */
  downDelayMs: number;
  /** Workers' CPU target: the average use aimed at, as a fraction of the CPU each replica was given. */
  workerCpuTarget: number;
}

/** What the controller remembers of a service between ticks. */
interface Seen {
  lastActiveAt: number;
  /** Peaks of the recent ticks: the scale-up looks at a few seconds, not one sample. */
  peaks: { at: number; peak: number }[];
  /** Since when the wanted count has stayed below the current one. */
  lowSince: number | null;
  /** A worker's: when its CPU was last read. */
  cpuReadAt?: number;
}

/** Ticks whose peaks decide a scale-up. */
const PEAK_WINDOW_MS = 3_000;

/** The replica count a rollout starts a service with: awake at its floor when the controller manages it here, else min_replicas (null). */
export function rolloutReplicas(ctx: Pick<ComputeContext, 'elastic'>, config: ServiceConfig): number | null {
  if (!ctx.elastic) return null;
  const managed = isElastic(config) && (config.service_type === 'web' || ctx.elastic.scalesWorkers);
  return managed ? replicaFloor(config) : null;
}

/** The replicas an elastic service wants for `peak` requests in flight, within its floor and max_replicas. */
export function wantedReplicas(config: ServiceConfig, peak: number): number {
  const floor = replicaFloor(config);
  const max = Math.max(floor, config.max_replicas ?? floor);
  const byLoad = Math.ceil(peak / (config.target_concurrency ?? 1));
  return Math.min(max, Math.max(floor, byLoad));
}

export class ElasticController {
  private readonly loop: Periodic;
  private readonly seen = new Map<string, Seen>();
  private readonly wakes = new Map<string, Promise<boolean>>();

  constructor(
    private readonly ctx: ComputeContext & { elastic: ElasticPort },
    private readonly log: Logger,
    private readonly opts: ElasticOptions,
  ) {
    this.loop = new Periodic(() => this.tick(), opts.tickMs, { log, what: 'elastic pass' });
  }

  /**
   * The passes (sleep, autoscale) run in one instance of compute at a time (leaderOnly in
   * server.ts); a wake is a request's (the activator's, in whichever instance it reached).
   * Leading again, what was seen before is forgotten: idle times count from now.
   */
  start(): void {
    this.seen.clear();
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * Starts a sleeping service's floor of replicas; resolves once the cluster started them
   * (the activator then waits for one to accept connections), true if it was asleep. One
   * wake per service at a time.
   */
  wake(serviceId: string): Promise<boolean> {
    const running = this.wakes.get(serviceId);
    if (running) return running;
    const wake = this.ctx.locks
      .run(serviceId, async () => {
        const s = await this.ctx.store.serviceById(serviceId);
        if (!s || s.deleted_at || s.desired_replicas == null || s.desired_replicas > 0) return false;
        const started = this.ctx.now().getTime();
        const to = replicaFloor(s);
        await this.setReplicas(s, to, (now) => events.woken(now, this.ctx.now().getTime() - started, to));
        const wakeMs = this.ctx.now().getTime() - started;
        this.seen.set(serviceId, { lastActiveAt: this.ctx.now().getTime(), peaks: [], lowSince: null });
        this.log.info({ service: serviceId, replicas: to, ms: wakeMs }, 'woke a sleeping service');
        return true;
      })
      .finally(() => this.wakes.delete(serviceId));
    this.wakes.set(serviceId, wake);
    return wake;
  }

  /** Puts an on_demand service to sleep now, as its idle timeout would (the benchmark's many wakes). */
  sleepNow(serviceId: string): Promise<void> {
    return this.ctx.locks.run(serviceId, () => this.sleep(serviceId, 0));
  }

  /** One pass over every elastic service. */
  async tick(): Promise<void> {
    const services = await this.ctx.store.elasticServices();
    const ids = new Set(services.map((s) => s.id));
    for (const id of this.seen.keys()) if (!ids.has(id)) this.seen.delete(id);
    for (const s of services) {
      if (this.ctx.locks.busy(s.id) || (s.desired_replicas ?? 0) === 0) continue;
      await this.judge(s).catch((err: unknown) => this.log.warn({ service: s.id, err: String(err) }, 'elastic: could not scale a service'));
    }
  }

  private async judge(s: Service): Promise<void> {
    const now = this.ctx.now().getTime();
    const seen = this.seen.get(s.id) ?? { lastActiveAt: now, peaks: [], lowSince: null };
    this.seen.set(s.id, seen);
    if (s.service_type === 'worker') return this.ctx.elastic.scalesWorkers ? this.judgeCpu(s, seen, now) : undefined;
    const traffic = this.ctx.elastic.traffic(s.id);
    if (traffic.inFlight > 0) seen.lastActiveAt = now;
    seen.lastActiveAt = Math.max(seen.lastActiveAt, traffic.lastActiveAt);
    seen.peaks = [...seen.peaks.filter((p) => now - p.at < PEAK_WINDOW_MS), { at: now, peak: traffic.peak }];
    const current = s.desired_replicas!;

    const idleMs = now - seen.lastActiveAt;
    if (
      s.deployment_mode === 'on_demand' &&
      s.min_replicas === 0 &&
      traffic.inFlight === 0 &&
      !this.ctx.elastic.shells.get(s.id) &&
      idleMs >= (s.idle_timeout_seconds ?? Infinity) * 1000
    ) {
      await this.ctx.locks.run(s.id, () => this.sleep(s.id, Math.round(idleMs / 1000)));
      return;
    }
    const peak = Math.max(...seen.peaks.map((p) => p.peak));
    const target = `target ${s.target_concurrency} per replica`;
    await this.follow(s.id, seen, now, current, wantedReplicas(s, peak), {
      up: `${peak} requests in flight, ${target}`,
      down: `at most ${peak} requests in flight for ${this.downDelaySeconds()} s, ${target}`,
    });
  }

  /** A worker: scaled on the CPU its replicas use, read every CPU_SAMPLE_MS (a use needs two reads apart in time). */
  private async judgeCpu(s: Service, seen: Seen, now: number): Promise<void> {
    if (seen.cpuReadAt !== undefined && now - seen.cpuReadAt < CPU_SAMPLE_MS) return;
    seen.cpuReadAt = now;
    const used = await this.ctx.elastic.cpu(s.id);
    if (used.length === 0) return;
    const current = s.desired_replicas!;
    const target = this.opts.workerCpuTarget;
    const average = used.reduce((a, b) => a + b, 0) / used.length;
    const load = `average CPU ${percent(average)} of the CPU given (target ${percent(target)}) over ${used.length} replica${used.length === 1 ? '' : 's'}`;
    await this.follow(s.id, seen, now, current, wantedForCpu(s, current, used, target), {
      up: load,
      down: `${load}; fewer replicas wanted for ${this.downDelaySeconds()} s`,
    });
  }

  /** Up at once; down only once `wanted` stayed below `current` for the scale-down delay. */
  private async follow(serviceId: string, seen: Seen, now: number, current: number, wanted: number, reason: { up: string; down: string }): Promise<void> {
    if (wanted > current) {
      seen.lowSince = null;
      await this.ctx.locks.run(serviceId, () => this.autoscale(serviceId, wanted, reason.up));
    } else if (wanted < current) {
      seen.lowSince ??= now;
      if (now - seen.lowSince >= this.opts.downDelayMs) {
        seen.lowSince = null;
        await this.ctx.locks.run(serviceId, () => this.autoscale(serviceId, wanted, reason.down));
      }
    } else {
      seen.lowSince = null;
    }
  }

  private downDelaySeconds(): number {
    return Math.round(this.opts.downDelayMs / 1000);
  }

  private async sleep(serviceId: string, idleSeconds: number): Promise<void> {
    const s = await this.ctx.store.serviceById(serviceId);
    if (!s || s.deleted_at || !s.desired_replicas) return;
    // A request that came in meanwhile keeps it awake.
    if (this.ctx.elastic.traffic(serviceId).inFlight > 0) return;
    await this.setReplicas(s, 0, (now) => events.slept(now, idleSeconds));
    this.log.info({ service: serviceId, idleSeconds }, 'put an idle service to sleep');
  }

  private async autoscale(serviceId: string, to: number, reason: string): Promise<void> {
    const s = await this.ctx.store.serviceById(serviceId);
    if (!s || s.deleted_at || !s.desired_replicas || s.desired_replicas === to || !isElastic(s)) return;
    const from = s.desired_replicas;
    await this.setReplicas(s, to, (now) => events.autoscaled(now, from, to, reason));
    this.log.info({ service: serviceId, from, to, reason }, 'autoscaled a service');
  }

  /**
   * Has the cluster run `to` replicas and records it, with its event. The order keeps every
   * live read in between benign: up, the replicas start before the count is raised (extra
   * running replicas read as ready); down, what goes is drained (the activator stops
   * sending to it), then the count is lowered, then the replicas stop (a stopped replica
   * above the count is parked; below it, it would read as crashed).
   */
  private async setReplicas(s: Service, to: number, event: (s: Service) => PierEvent): Promise<void> {
    const d = s.current_deployment_id ? await this.ctx.store.deploymentById(s.current_deployment_id) : undefined;
    if (!d) return;
    const from = s.desired_replicas ?? 0;
    const spec = specOf({ ...s, desired_replicas: to }, d);
    const record = (n: number, withEvent: boolean) =>
      this.ctx.store.transaction(async (tx) => {
        const now = await tx.updateService(s.id, { desired_replicas: n });
        if (withEvent) await tx.writeEvent(event(now));
      });
    if (to > from) {
      await this.ctx.elastic.scale(spec, to);
      await record(to, true);
    } else {
      await this.ctx.elastic.drain(s.id, to);
      await record(to, false);
      try {
        await this.ctx.elastic.scale(spec, to);
      } catch (err) {
        // Still running: the count goes back, and nothing is said.
        await record(from, false);
        throw err;
      }
      const after = (await this.ctx.store.serviceById(s.id)) ?? s;
      await this.ctx.store.transaction((tx) => tx.writeEvent(event(after)));
    }
    this.ctx.eventsWritten();
  }
}
