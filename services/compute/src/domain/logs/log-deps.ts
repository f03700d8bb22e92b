import type { LogFeed } from './log-feed.ts';
import type { LogSource, LogStore } from './log-port.ts';

/** Everything the logs use cases and the collector need, as the context carries it. */
export interface LogDeps {
  source: LogSource;
  store: LogStore;
  /** New lines as the collector reads them, for `follow`. */
  feed: LogFeed;
  /** How long history keeps lines. */
  retentionDays: number;
}
