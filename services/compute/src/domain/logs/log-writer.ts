// Collected lines go to the store in batches: one transaction every `flushMs`, or as soon as
// `batchLines` wait, holding the lines and how far each replica got, so a crash loses
// neither more nor less than it re-reads. When the store falls behind (or is away), adding
// waits: the collector stops reading, and the cluster keeps the output meanwhile.
import { Periodic, type Logger } from '@pier/kit';
import type { LogLine, LogReplica, LogStore, ReplicaCursor, StoredLine } from './log-port.ts';
import { timestampOf } from './log-time.ts';

export const DAY_MS = 86_400_000;

export interface LogWriterOptions {
  batchLines: number;
  flushMs: number;
  retentionDays: number;
  now: () => Date;
}

export class LogWriter {
  private lines: StoredLine[] = [];
  private cursors = new Map<string, ReplicaCursor>();
  private flushing?: Promise<void>;
  private readonly waiting: (() => void)[] = [];
  private readonly loop: Periodic;
  private stopped = false;
  /** Lines stored since start (the benchmark reads it). */
  written = 0;

  constructor(
    private readonly store: LogStore,
    private readonly log: Logger,
    private readonly opts: LogWriterOptions,
  ) {
    this.loop = new Periodic(() => this.flush(), opts.flushMs, { log, what: 'log flush' });
  }

  start(): void {
    // What a previous stop could not store is read again by whoever collects now.
    this.lines = [];
    this.cursors = new Map();
    this.stopped = false;
    this.loop.start();
  }

  /** Lets every adder through, room or not: stopping must not wait on a store that is away. */
  release(): void {
    this.stopped = true;
    for (const release of this.waiting.splice(0)) release();
  }

  /** Stops the timer and stores what waits (a failure is logged: those lines are read again at the next start). */
  async stop(): Promise<void> {
    this.release();
    await this.loop.stop();
    await this.flushing?.catch(() => undefined);
    await this.flush().catch((err: unknown) =>
      this.log.warn({ err: String(err), lines: this.lines.length }, 'could not store the last log lines; they are read again at the next start'),
    );
  }

  /** Lines not stored yet. */
  get pending(): number {
    return this.lines.length;
  }

  /** Queues one replica's new lines and its cursor; waits while too many wait for the store. */
  async add(replica: LogReplica, lines: LogLine[], cursor: string): Promise<void> {
    // Older than the retention: their day is dropped already (or about to be).
    const cutoff = timestampOf(new Date(this.opts.now().getTime() - this.opts.retentionDays * DAY_MS));
    for (const l of lines) if (l.ts >= cutoff) this.lines.push({ ...l, serviceId: replica.serviceId });
    this.cursors.set(replica.key, { key: replica.key, serviceId: replica.serviceId, ts: cursor });
    if (this.lines.length >= this.opts.batchLines) void this.flush().catch(() => undefined); // the loop retries and reports
    while (!this.stopped && this.lines.length >= this.opts.batchLines * 10) await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Stores everything queued now (one transaction); lines queued meanwhile wait for the next. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.lines.length === 0 && this.cursors.size === 0) return Promise.resolve();
    const lines = this.lines;
    const cursors = [...this.cursors.values()];
    this.lines = [];
    this.cursors = new Map();
    this.flushing = this.store.append(lines, cursors).then(
      () => {
        this.written += lines.length;
        this.flushing = undefined;
        // A full batch came meanwhile: on with it now, not at the next tick.
        if (this.lines.length >= this.opts.batchLines) void this.flush().catch(() => undefined);
        for (const release of this.waiting.splice(0)) release();
      },
      (err: unknown) => {
        this.flushing = undefined;
        // Back in front of what came meanwhile; a newer cursor of the same replica wins.
        this.lines = lines.concat(this.lines);
        for (const c of cursors) if (!this.cursors.has(c.key)) this.cursors.set(c.key, c);
        throw err;
      },
    );
    return this.flushing;
  }
}
