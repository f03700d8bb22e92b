// New lines as the collector reads them, handed to whoever follows a service's logs. The
// collector already follows every replica, so a client following costs no cluster stream
// of its own; and what a follower sees is what history will hold.
//
// One instance of compute collects (leaderOnly in server.ts), and a follower's request may
// reach any: the collector's instance hands each batch to its own followers here and to the
// other instances through the fanout (NATS core, clients/nats-log-fanout.ts), and each
// instance receives the batches of a service while one of its clients follows it.
import type { LogLine } from './log-port.ts';

/** Lines a follower may fall behind by before the oldest are dropped (and it is told how many). */
export const MAX_QUEUED_LINES = 10_000;

export interface FedLine {
  /** The replica unit it came from (LogReplica.key). */
  key: string;
  line: LogLine;
}

export interface FeedBatch {
  lines: FedLine[];
  /** Lines dropped before these because the follower did not keep up. */
  dropped: number;
}

export class LogSubscription {
  private queue: FedLine[] = [];
  private dropped = 0;
  private wake?: () => void;
  private closed = false;

  constructor(
    readonly replica: string | undefined,
    private readonly onClose: (s: LogSubscription) => void,
  ) {}

  push(key: string, lines: LogLine[]): void {
    for (const line of lines) if (this.replica === undefined || line.replica === this.replica) this.queue.push({ key, line });
    const over = this.queue.length - MAX_QUEUED_LINES;
    if (over > 0) {
      this.queue.splice(0, over);
      this.dropped += over;
    }
    if (this.queue.length) this.wake?.();
  }

  /** What came since the last call, waiting for something if nothing did; null once closed or `signal` aborted. */
  async next(signal: AbortSignal): Promise<FeedBatch | null> {
    while (!this.closed && !signal.aborted && this.queue.length === 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done);
      });
    }
    if (this.closed || signal.aborted) return null;
    const batch = { lines: this.queue, dropped: this.dropped };
    this.queue = [];
    this.dropped = 0;
    return batch;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    this.onClose(this);
  }
}

/** How batches reach the followers on the other instances of compute. */
export interface LogFanout {
  /** Hands one replica's batch to the other instances; never throws (a batch that cannot leave is lost to their followers only). */
  send(serviceId: string, key: string, lines: LogLine[]): void;
  /**
   * The batches of one service from the other instances, until closed. `ready` settles once
   * the subscription is in place (every batch sent from then on comes), or could not be
   * made in time: following never waits long for the broker.
   */
  receive(serviceId: string, deliver: (key: string, lines: LogLine[]) => void): { ready: Promise<void>; close(): void };
}

export class LogFeed {
  private readonly subscribers = new Map<string, Set<LogSubscription>>();
  /** What the fanout brings of each followed service, while someone here follows it. */
  private readonly remote = new Map<string, { ready: Promise<void>; close(): void }>();

  constructor(private readonly fanout?: LogFanout) {}

  /**
   * Lines of one service (of one replica only, when given) from now on, until closed. The
   * first follower of a service here subscribes to its batches from the other instances,
   * and this resolves once that subscription is in place: lines read after it cannot be
   * missed, wherever they are collected.
   */
  async subscribe(serviceId: string, replica?: string): Promise<LogSubscription> {
    let set = this.subscribers.get(serviceId);
    if (!set) {
      const mine = new Set<LogSubscription>();
      set = mine;
      this.subscribers.set(serviceId, mine);
      if (this.fanout)
        this.remote.set(
          serviceId,
          this.fanout.receive(serviceId, (key, lines) => this.deliver(serviceId, key, lines)),
        );
    }
    const followers = set;
    const sub = new LogSubscription(replica, (s) => {
      followers.delete(s);
      if (followers.size > 0 || this.subscribers.get(serviceId) !== followers) return;
      // The last follower here gone: no more of this service's batches.
      this.subscribers.delete(serviceId);
      this.remote.get(serviceId)?.close();
      this.remote.delete(serviceId);
    });
    followers.add(sub);
    await this.remote.get(serviceId)?.ready;
    return sub;
  }

  /** A batch collected here: to this instance's followers, and to the other instances'. */
  publish(serviceId: string, key: string, lines: LogLine[]): void {
    this.deliver(serviceId, key, lines);
    this.fanout?.send(serviceId, key, lines);
  }

  private deliver(serviceId: string, key: string, lines: LogLine[]): void {
    const set = this.subscribers.get(serviceId);
    if (set) for (const sub of set) sub.push(key, lines);
  }
}
