// New lines as the collector reads them, handed to whoever follows a service's logs. The
// collector already follows every replica, so a client following costs no cluster stream
// of its own; and what a follower sees is what history will hold.
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

export class LogFeed {
  private readonly subscribers = new Map<string, Set<LogSubscription>>();

  /** Lines of one service (of one replica only, when given) from now on, until closed. */
  subscribe(serviceId: string, replica?: string): LogSubscription {
    const set = this.subscribers.get(serviceId) ?? this.subscribers.set(serviceId, new Set()).get(serviceId)!;
    const sub = new LogSubscription(replica, (s) => {
      set.delete(s);
      if (set.size === 0) this.subscribers.delete(serviceId);
    });
    set.add(sub);
    return sub;
  }

  publish(serviceId: string, key: string, lines: LogLine[]): void {
    const set = this.subscribers.get(serviceId);
    if (set) for (const sub of set) sub.push(key, lines);
  }
}
