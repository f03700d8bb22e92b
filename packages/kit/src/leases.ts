import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Knex } from 'knex';
import { KeyedMutex } from './locks.ts';
import type { Logger } from './logger.ts';
import type { Background } from './service.ts';

// Leases in the service's own PostgreSQL schema: what lets two or more instances of one
// service share its work. A lease is a row (name, holder, expires_at): taken when free or
// expired, kept by renewing it, given back by deleting it. A holder that dies stops
// renewing, and its lease is free once it expires (LEASE_TTL_MS). Two uses:
//   - ResourceLocks: one change at a time per resource across every instance (a deploy, an
//     env change and a delete of one service queue behind each other wherever they arrive);
//   - LeaderElection + leaderOnly: a background loop (reconciler, schedulers, collectors)
//     runs in one instance at a time, handed over within a lease's lifetime when its
//     holder dies, at once when it stops.
// A lease holds no connection while it is held: a cluster call of minutes costs two short
// statements (take, give back) and a renewal every third of the lifetime.

/** How long a lease outlives its holder's last renewal. */
export const LEASE_TTL_MS = 15_000;

/** The leases table; every service creates it in its own schema with this migration step. */
export async function createLeasesTable(db: Knex): Promise<void> {
  await db.schema.createTable('leases', (t) => {
    t.text('name').primary();
    t.text('holder').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
}

/** This process, as a lease holder: unique per start, readable in the table. */
export function holderId(service: string): string {
  return `${service}@${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** Whether `holder` names a process of this host (same host name) that no longer runs. */
function deadOnThisHost(holder: string): boolean {
  const m = /@(.+):(\d+):[0-9a-f]+$/.exec(holder);
  if (!m || m[1] !== hostname() || Number(m[2]) === process.pid) return false;
  try {
    process.kill(Number(m[2]), 0);
    return false;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export class Leases {
  constructor(
    private readonly db: Knex,
    readonly holder: string,
    readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /**
   * Takes (or renews) `name` when it is free, expired, already ours, or held by a process
   * of this machine that has died (a restart on one host, as `./pier up` and the tests do,
   * takes over at once instead of waiting out the lifetime); whether we hold it now.
   */
  async acquire(name: string): Promise<boolean> {
    if (await this.upsert(name)) return true;
    const holder = await this.holderOf(name);
    if (!holder || !deadOnThisHost(holder)) return false;
    const taken = await this.db('leases')
      .where({ name, holder })
      .update({ holder: this.holder, expires_at: this.db.raw(`now() + ? * interval '1 millisecond'`, [this.ttlMs]) });
    return taken === 1;
  }

  private async upsert(name: string): Promise<boolean> {
    const { rows } = await this.db.raw<{ rows: { holder: string }[] }>(
      `insert into leases (name, holder, expires_at) values (?, ?, now() + ? * interval '1 millisecond')
       on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
       where leases.holder = excluded.holder or leases.expires_at < now()
       returning holder`,
      [name, this.holder, this.ttlMs],
    );
    return rows.length === 1;
  }

  /** Gives `name` back, if it is still ours. */
  async release(name: string): Promise<void> {
    await this.db('leases').where({ name, holder: this.holder }).delete();
  }

  /** Who holds `name` now (an expired lease is no one's). */
  async holderOf(name: string): Promise<string | null> {
    const row = await this.db('leases').where({ name }).andWhere('expires_at', '>', this.db.fn.now()).first('holder');
    return (row?.holder as string | undefined) ?? null;
  }
}

/**
 * KeyedMutex's queue within this process, and a lease per key across instances: `run`
 * waits until no other instance changes the same resource, holds the lease while `fn`
 * runs (renewed), and gives it back. `busy` is this process's own queue (the reconcilers
 * skip what a request of theirs is changing; what another instance changes waits in `run`).
 */
export class ResourceLocks extends KeyedMutex {
  constructor(
    private readonly leases: Leases,
    private readonly log?: Logger,
  ) {
    super();
  }

  override run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return super.run(key, () => this.held(`lock:${key}`, fn));
  }

  /**
   * `run`, unless `key` is taken now (by this process or another instance): then nothing
   * runs and the answer is `{ ran: false }`. For work that one instance must do and any may
   * start (a disk backup's copy, its recovery): whoever holds it is doing it.
   */
  async tryRun<T>(key: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    if (this.busy(key)) return { ran: false };
    return super.run(key, async () => {
      if (!(await this.leases.acquire(`lock:${key}`))) return { ran: false };
      return { ran: true, value: await this.whileHeld(`lock:${key}`, fn) };
    });
  }

  private async held<T>(name: string, fn: () => Promise<T>): Promise<T> {
    // Another instance's change of the same resource: wait for it (or for its lease to expire).
    for (let wait = 20; !(await this.leases.acquire(name)); wait = Math.min(wait * 2, 250)) {
      await new Promise((r) => setTimeout(r, wait));
    }
    return this.whileHeld(name, fn);
  }

  /** Runs `fn` with `name` taken: renewed meanwhile, given back after. */
  private async whileHeld<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const renew = setInterval(() => {
      this.leases.acquire(name).then(
        (ours) => ours || this.log?.error({ lease: name }, 'a resource lock was lost while its change ran (the process stalled past its lifetime)'),
        (err: unknown) => this.log?.warn({ err: String(err), lease: name }, 'renewing a resource lock failed; retrying'),
      );
    }, this.leases.ttlMs / 3);
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      await this.leases
        .release(name)
        .catch((err: unknown) => this.log?.warn({ err: String(err), lease: name }, 'giving back a resource lock failed; it expires'));
    }
  }
}

/**
 * One leader per name among a service's instances: each tries for the lease every third of
 * its lifetime, the holder by renewing it. `onChange` is told when this instance gains or
 * loses leadership; `stop` gives the lease back, so another instance takes it at its next try.
 */
export class LeaderElection {
  private timer?: NodeJS.Timeout;
  private leading = false;
  private stopped = true;
  private trying?: Promise<void>;

  constructor(
    private readonly leases: Leases,
    readonly name: string,
    private readonly onChange: (leading: boolean) => Promise<void> | void,
    private readonly log?: Logger,
  ) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.stopped = false;
    this.trying = this.attempt();
  }

  /** Settles after the first attempt: leadership is known. */
  settled(): Promise<void> {
    return this.trying ?? Promise.resolve();
  }

  private async attempt(): Promise<void> {
    let ours: boolean;
    try {
      ours = await this.leases.acquire(this.name);
    } catch (err) {
      // The database out of reach: a leader that cannot renew must assume it lost the lease
      // by the time it expires, so it stops before another instance starts.
      this.log?.warn({ err: String(err), lease: this.name }, 'leader election: the database did not answer');
      ours = false;
    }
    if (ours !== this.leading && !this.stopped) {
      this.leading = ours;
      this.log?.info({ lease: this.name, holder: this.leases.holder }, ours ? `leading ${this.name}` : `no longer leading ${this.name}`);
      await this.onChange(ours);
    }
    if (!this.stopped) this.timer = setTimeout(() => (this.trying = this.attempt()), this.leases.ttlMs / 3);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.trying;
    if (this.leading) {
      this.leading = false;
      await this.onChange(false);
    }
    // Given back even when an attempt under way as we stopped had just taken it.
    await this.leases.release(this.name).catch(() => undefined);
  }
}

/**
 * A background task run by one instance at a time: started when this instance leads
 * `name`, stopped when it no longer does (and, when this instance stops, the lease is given
 * back at once). `recovered` settles once leadership is known and, if leading, the task's
 * own first pass has.
 */
export function leaderOnly(leases: Leases, name: string, task: Background, log?: Logger): Background {
  let running = false;
  const election = new LeaderElection(
    leases,
    `leader:${name}`,
    async (leading) => {
      if (leading && !running) {
        running = true;
        task.start();
      } else if (!leading && running) {
        running = false;
        await task.stop();
      }
    },
    log,
  );
  return {
    start: () => election.start(),
    stop: () => election.stop(),
    recovered: async () => {
      await election.settled();
      if (running) await task.recovered?.();
    },
  };
}
