import type { Knex, Logger } from '@pier/kit';
import type { CredentialTable as Table, UseRecorder } from '../domain/authn-port.ts';

/**
 * Records `last_used_at` of API keys and CLI sessions without a write per request: uses
 * are collected in memory and written in one statement per table every `intervalMs`
 * (500 ms), so a use reaches the database within about half a second. A crash loses at
 * most that last half second of "last used" times, never anything else.
 */
export class LastUsedRecorder implements UseRecorder {
  private readonly pending: Record<Table, Map<string, Date>> = { api_keys: new Map(), cli_sessions: new Map() };
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly db: Knex,
    private readonly log: Logger,
    private readonly intervalMs = 500,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  touch(table: Table, id: string, at = new Date()): void {
    this.pending[table].set(id, at);
  }

  /** A use not yet written, so listings served by this instance are never behind. */
  pendingFor(table: Table, id: string): Date | undefined {
    return this.pending[table].get(id);
  }

  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    for (const table of ['api_keys', 'cli_sessions'] as const) {
      const batch = this.pending[table];
      if (batch.size === 0) continue;
      this.pending[table] = new Map();
      const ids = [...batch.keys()];
      const times = [...batch.values()];
      try {
        await this.db.raw(
          `update ?? t set last_used_at = greatest(t.last_used_at, u.at)
           from (select unnest(?::uuid[]) as id, unnest(?::timestamptz[]) as at) u
           where t.id = u.id`,
          [table, ids, times],
        );
      } catch (err) {
        // Put the uses back (newer ones win) so the next pass retries them.
        for (const [id, at] of batch) if (!this.pending[table].has(id)) this.pending[table].set(id, at);
        this.log.warn({ err: String(err), table }, 'could not record last_used_at; will retry');
      }
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
