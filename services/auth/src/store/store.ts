import { writeEvent, type Knex, type PierEvent } from '@pier/kit';
import { ApiKeyStore } from './api-keys.ts';
import { CliSessionStore } from './cli-sessions.ts';
import { MemberStore } from './members.ts';
import { UserStore } from './users.ts';
import { VpcStore } from './vpcs.ts';
import { WorkspaceStore } from './workspaces.ts';
import type { BootstrapRow } from '../domain/records.ts';
import type { AuthStore } from '../domain/store-port.ts';

// Any stable 64-bit number will do; it only has to be the same in every auth instance.
const BOOTSTRAP_LOCK = 7_101_000_001;

/**
 * The auth schema, bound to a connection pool or to one transaction. Domain code asks for
 * a transaction and gets a store whose every table and the outbox share it, so a change
 * and its event commit together or not at all.
 */
export class KnexAuthStore implements AuthStore {
  readonly users: UserStore;
  readonly workspaces: WorkspaceStore;
  readonly members: MemberStore;
  readonly vpcs: VpcStore;
  readonly apiKeys: ApiKeyStore;
  readonly sessions: CliSessionStore;

  constructor(private readonly db: Knex | Knex.Transaction) {
    this.users = new UserStore(db);
    this.workspaces = new WorkspaceStore(db);
    this.members = new MemberStore(db);
    this.vpcs = new VpcStore(db);
    this.apiKeys = new ApiKeyStore(db);
    this.sessions = new CliSessionStore(db);
  }

  transaction<T>(fn: (tx: AuthStore) => Promise<T>): Promise<T> {
    return this.db.transaction((trx) => fn(new KnexAuthStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  /** The installation id kept beside the auth epoch. */
  async installation(): Promise<string> {
    const row = (await this.db('auth_epoch').where('id', 1).first('installation')) as { installation: string };
    return row.installation;
  }

  async raiseAuthEpoch(): Promise<number> {
    const [row] = await this.db('auth_epoch').where({ id: 1 }).increment('epoch', 1).returning<{ epoch: number }[]>('epoch');
    return row!.epoch;
  }

  /**
   * Serialises bootstrap between auth instances starting at once against one database;
   * held until the surrounding transaction ends.
   */
  async lockBootstrap(): Promise<void> {
    await this.db.raw('select pg_advisory_xact_lock(?)', [BOOTSTRAP_LOCK]);
  }

  async bootstrapRecord(): Promise<BootstrapRow | undefined> {
    return this.db<BootstrapRow>('bootstrap').first();
  }

  async hasUsers(): Promise<boolean> {
    return (await this.db('users').first('id')) !== undefined;
  }

  async recordBootstrap(row: Omit<BootstrapRow, 'created_at'>): Promise<void> {
    await this.db('bootstrap').insert({ id: 1, ...row });
  }
}
