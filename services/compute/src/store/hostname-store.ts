import { ConflictError, keysetPage, mapPage, pgErrorOf, writeEvent, type Knex, type Page, type PageRequest, type PierEvent } from '@pier/kit';
import type {
  ClaimOwner,
  Hostname,
  HostnamePatch,
  HostnameStore,
  NewHostname,
  RemovedClaim,
  RoutableService,
} from '../domain/hostnames/hostname-store-port.ts';

type Db = Knex | Knex.Transaction;
type Query = Knex.QueryBuilder;

const hostnameRow = (r: Record<string, unknown>): Hostname => r as unknown as Hostname;

/** Verified domains, and claims that have not lapsed by `now`. */
const live = (q: Query, now: Date): Query => q.andWhere((w) => w.whereNotNull('verified_at').orWhere('claim_expires_at', '>', now));
/** Unverified claims that lapsed by `now`. */
const lapsed = (q: Query, now: Date): Query => q.whereNull('verified_at').andWhere('claim_expires_at', '<=', now);

export class KnexHostnameStore implements HostnameStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: HostnameStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexHostnameStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async lockHostname(hostname: string): Promise<void> {
    await this.db.raw(`select pg_advisory_xact_lock(hashtextextended('compute.domains:' || ?, 0))`, [hostname]);
  }

  async hostnameHolder(hostname: string): Promise<Hostname | undefined> {
    const r = await this.db('domains').where({ hostname }).whereNotNull('verified_at').first();
    return r ? hostnameRow(r) : undefined;
  }

  async insertHostname(row: NewHostname): Promise<Hostname> {
    try {
      const [r] = await this.db('domains').insert(row).returning('*');
      return hostnameRow(r);
    } catch (err) {
      const known = pgErrorOf(err);
      // Only (service, hostname) is unique among claims: other services may claim it too.
      if (known instanceof ConflictError) throw new ConflictError(`${row.hostname} is already attached to this service`, 'hostname_taken');
      throw known ?? err;
    }
  }

  async findHostname(serviceId: string, id: string, now: Date): Promise<Hostname | undefined> {
    const r = await live(this.db('domains').where({ id, service_id: serviceId }), now).first();
    return r ? hostnameRow(r) : undefined;
  }

  async listHostnames(serviceId: string, page: PageRequest, now: Date): Promise<Page<Hostname>> {
    return mapPage(
      await keysetPage<Record<string, unknown>>(live(this.db('domains').where({ service_id: serviceId }), now), page, { order: 'asc' }),
      hostnameRow,
    );
  }

  async countHostnames(serviceId: string, now: Date): Promise<number> {
    const [r] = await live(this.db('domains').where({ service_id: serviceId }), now).count<{ count: string }[]>('* as count');
    return Number(r?.count ?? 0);
  }

  async markVerified(id: string, now: Date): Promise<Hostname | undefined> {
    try {
      const [r] = await live(this.db('domains').where({ id }).whereNull('verified_at'), now)
        .update({ verified_at: now, claim_expires_at: null, updated_at: this.db.fn.now() })
        .returning('*');
      return r ? hostnameRow(r) : undefined;
    } catch (err) {
      const known = pgErrorOf(err);
      // domains_verified_hostname: another verification committed first.
      if (known instanceof ConflictError) throw new ConflictError('the hostname was verified for another service first', 'hostname_taken');
      throw known ?? err;
    }
  }

  removeRivalClaims(hostname: string, keepId: string): Promise<RemovedClaim[]> {
    return this.removeClaims((q) => q.where({ hostname }).whereNull('verified_at').whereNot({ id: keepId }));
  }

  removeLapsedClaims(now: Date, which: { limit: number } | { serviceId: string; hostname: string }): Promise<RemovedClaim[]> {
    return this.removeClaims((q) =>
      'limit' in which
        ? lapsed(q, now).orderBy('claim_expires_at').limit(which.limit)
        : lapsed(q.where({ service_id: which.serviceId, hostname: which.hostname }), now),
    );
  }

  /** Deletes the domains `pick` selects; each with the service whose workspace hears of it. */
  private async removeClaims(pick: (q: Query) => Query): Promise<RemovedClaim[]> {
    const gone = (
      await this.db('domains')
        .whereIn('id', pick(this.db('domains').select('id')))
        .delete()
        .returning('*')
    ).map(hostnameRow);
    if (!gone.length) return [];
    const owners: ClaimOwner[] = await this.db('services')
      .whereIn(
        'id',
        gone.map((d) => d.service_id),
      )
      .select('id', 'workspace_id', 'vpc_id', 'name');
    const byId = new Map(owners.map((o) => [o.id, o]));
    // A service removed meanwhile took its domains with it (on delete cascade): nobody to tell.
    return gone.flatMap((domain) => {
      const owner = byId.get(domain.service_id);
      return owner ? [{ domain, owner }] : [];
    });
  }

  async updateHostname(id: string, patch: HostnamePatch): Promise<Hostname> {
    const [r] = await this.db('domains')
      .where({ id })
      .update({ ...patch, updated_at: this.db.fn.now() })
      .returning('*');
    return hostnameRow(r);
  }

  async deleteHostname(id: string): Promise<void> {
    await this.db('domains').where({ id }).delete();
  }

  async routableServices(): Promise<RoutableService[]> {
    return this.db('services')
      .select('id', 'workspace_id', 'vpc_id', 'name', 'port', 'desired_replicas', 'health_check_path')
      .whereNull('deleted_at')
      .where({ provisioned: true, service_type: 'web' })
      .whereNotNull('port')
      .whereNotIn('status', ['deleting', 'deleted'])
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async routedHostnames(): Promise<Hostname[]> {
    return (
      await this.db('domains')
        .where({ routed: true })
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
    ).map(hostnameRow);
  }

  async hostnamesNeedingTls(before: Date): Promise<Hostname[]> {
    const rows = await this.db('domains')
      .where({ routed: true })
      .andWhere((q) => q.where('tls_status', 'pending').orWhere((q2) => q2.where('tls_status', 'issued').andWhere('tls_expires_at', '<', before)))
      .orderBy('tls_expires_at');
    return rows.map(hostnameRow);
  }

  async deleteServiceHostnames(serviceId: string): Promise<Hostname[]> {
    return (await this.db('domains').where({ service_id: serviceId }).delete().returning('*')).map(hostnameRow);
  }
}
