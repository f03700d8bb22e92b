import { Periodic, type Background, type Logger } from '@pier/kit';
import type { EventStore } from './store-port.ts';

const TRIM_BATCH = 5000;

/** Deletes events older than the retention, every `everyMs` (one instance: leaderOnly). */
export function retention(store: EventStore, days: number, everyMs: number, log: Logger): Background & { runOnce(): Promise<number> } {
  const runOnce = async () => {
    const cutoff = new Date(Date.now() - days * 86_400_000);
    let deleted = 0;
    for (;;) {
      const n = await store.trim(cutoff, TRIM_BATCH);
      deleted += n;
      if (n < TRIM_BATCH) break;
    }
    if (deleted > 0) log.info({ deleted, retentionDays: days }, 'events past their retention deleted');
    return deleted;
  };
  const loop = new Periodic(runOnce, everyMs, { log, what: 'events retention pass' });
  return { start: () => loop.start(runOnce), stop: () => loop.stop(), runOnce };
}
