// Collection: every replica of every service of this compute is followed while it runs,
// its lines batched into the store (history) and handed to followers (the feed). Replicas
// are found by listing the cluster every `scanMs`, and at once when the cluster says one
// started (docker events). Each replica resumes where the store says it got to, so a
// restart of compute neither loses nor repeats lines: the cursor is stored in the same
// transaction as the lines, and lines at or before it are skipped when reading resumes.
// One instance of compute collects at a time (leaderOnly in server.ts), so each line is read
// and stored once; the feed carries its batches to followers on the other instances. An
// instance that leads again forgets what it read before: the other one read on meanwhile,
// and the store's cursors say where.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { LogLine, LogReplica } from './log-port.ts';
import { LogWriter } from './log-writer.ts';

export interface LogCollectorOptions {
  batchLines: number;
  flushMs: number;
  scanMs: number;
}

/** How long a service id this compute does not know is taken as someone else's (another compute on the same Docker). */
const FOREIGN_TTL_MS = 60_000;

export class LogCollector {
  private readonly followers = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Stopped replicas read to their end: not read again until they run again. */
  private readonly drained = new Set<string>();
  /** Newest line read per replica (ahead of the store by what waits in the writer). */
  private readonly last = new Map<string, string>();
  private readonly services = new Map<string, { ours: boolean; checkedAt: number }>();
  private readonly loop: Periodic;
  private watching = new AbortController();
  private scanning?: Promise<void>;
  private rescan = false;
  readonly writer: LogWriter;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
    opts: LogCollectorOptions,
  ) {
    this.writer = new LogWriter(ctx.logs.store, log, { ...opts, retentionDays: ctx.logs.retentionDays, now: () => ctx.now() });
    this.loop = new Periodic(() => this.scan(), opts.scanMs, { log, what: 'log collection pass' });
  }

  start(): void {
    this.drained.clear();
    this.last.clear();
    this.watching = new AbortController();
    this.writer.start();
    this.loop.start(() => this.scan());
    this.ctx.logs.source.watch(() => void this.scan().catch(() => undefined), this.watching.signal);
  }

  /** Stops reading, then stores what was read. */
  async stop(): Promise<void> {
    this.watching.abort();
    await this.loop.stop();
    await this.scanning?.catch(() => undefined);
    for (const f of this.followers.values()) f.abort.abort();
    this.writer.release();
    await Promise.all([...this.followers.values()].map((f) => f.done));
    await this.writer.stop();
  }

  /** Replicas followed right now (tests and the benchmark read it). */
  get following(): number {
    return this.followers.size;
  }

  /** Finds replicas to follow; a scan asked for while one runs makes it run once more. */
  scan(): Promise<void> {
    if (this.scanning) {
      this.rescan = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.rescan = false;
        await this.scanOnce();
      } while (this.rescan);
    })().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    const replicas = await this.ctx.logs.source.replicas();
    const present = new Set<string>();
    for (const r of replicas) {
      present.add(r.key);
      if (this.followers.has(r.key) || !(await this.isOurs(r.serviceId))) continue;
      if (r.running) this.drained.delete(r.key);
      else if (this.drained.has(r.key)) continue;
      this.attach(r);
    }
    // Forget what the cluster no longer has.
    for (const key of [...this.drained, ...this.last.keys()]) {
      if (!present.has(key) && !this.followers.has(key)) {
        this.drained.delete(key);
        this.last.delete(key);
      }
    }
  }

  /** A service of this compute's database (several computes may share one Docker host in development). */
  private async isOurs(serviceId: string): Promise<boolean> {
    const known = this.services.get(serviceId);
    if (known && (known.ours || Date.now() - known.checkedAt < FOREIGN_TTL_MS)) return known.ours;
    const ours = (await this.ctx.store.serviceById(serviceId)) !== undefined;
    this.services.set(serviceId, { ours, checkedAt: Date.now() });
    return ours;
  }

  private attach(r: LogReplica): void {
    const abort = new AbortController();
    const done = this.follow(r, abort.signal)
      .then(
        () => {
          if (!r.running || !abort.signal.aborted) this.drained.add(r.key);
        },
        (err: unknown) => {
          if (!abort.signal.aborted)
            this.log.warn({ err: String(err), replica: r.key, service: r.serviceId }, 'log collection of a replica stopped; will resume');
        },
      )
      .finally(() => this.followers.delete(r.key));
    this.followers.set(r.key, { abort, done });
  }

  private async follow(r: LogReplica, signal: AbortSignal): Promise<void> {
    const resumeAt = this.last.get(r.key) ?? (await this.ctx.logs.store.cursor(r.key));
    let seam = resumeAt;
    for await (const batch of this.ctx.logs.source.follow(r, resumeAt, signal)) {
      let fresh: LogLine[] = batch;
      if (seam !== null) {
        // Reading resumed at the cursor's time: skip what was stored already, then take
        // everything (timestamps of stdout and stderr may interleave slightly out of order).
        const from = seam;
        const first = batch.findIndex((l) => l.ts > from);
        if (first === -1) continue;
        fresh = batch.slice(first);
        seam = null;
      }
      let newest = this.last.get(r.key) ?? resumeAt ?? '';
      for (const l of fresh) if (l.ts > newest) newest = l.ts;
      this.last.set(r.key, newest);
      this.ctx.logs.feed.publish(r.serviceId, r.key, fresh);
      await this.writer.add(r, fresh, newest);
    }
  }
}
