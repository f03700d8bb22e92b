import { ConflictError, keysetPage, mapPage, pgErrorOf, writeEvent, type Knex, type Page, type PageRequest, type PierEvent } from '@pier/kit';
import type { Domain, DomainPatch, DomainStore, NewDomain } from '../domain/domain-store-port.ts';
import type { Service } from '../domain/records.ts';

type Db = Knex | Knex.Transaction;

const domainRow = (r: Record<string, unknown>): Domain => r as unknown as Domain;

export class KnexDomainStore implements DomainStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: DomainStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexDomainStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async insertDomain(row: NewDomain): Promise<Domain> {
    try {
      const [r] = await this.db('domains').insert(row).returning('*');
      return domainRow(r);
    } catch (err) {
      const known = pgErrorOf(err);
      // The unique index spans every workspace: whoever holds the name, it is not free.
      if (known instanceof ConflictError) throw new ConflictError(`${row.hostname} is already attached to a service`, 'hostname_taken');
      throw known ?? err;
    }
  }

  async findDomain(serviceId: string, id: string): Promise<Domain | undefined> {
    const r = await this.db('domains').where({ id, service_id: serviceId }).first();
    return r ? domainRow(r) : undefined;
  }

  async listDomains(serviceId: string, page: PageRequest): Promise<Page<Domain>> {
    return mapPage(await keysetPage<Record<string, unknown>>(this.db('domains').where({ service_id: serviceId }), page, { order: 'asc' }), domainRow);
  }

  async countDomains(serviceId: string): Promise<number> {
    const [r] = await this.db('domains').where({ service_id: serviceId }).count<{ count: string }[]>('* as count');
    return Number(r?.count ?? 0);
  }

  async updateDomain(id: string, patch: DomainPatch): Promise<Domain> {
    const [r] = await this.db('domains')
      .where({ id })
      .update({ ...patch, updated_at: this.db.fn.now() })
      .returning('*');
    return domainRow(r);
  }

  async deleteDomain(id: string): Promise<void> {
    await this.db('domains').where({ id }).delete();
  }

  async routableServices(): Promise<Service[]> {
    return this.db('services')
      .whereNull('deleted_at')
      .where({ provisioned: true, service_type: 'web' })
      .whereNotNull('port')
      .whereNotIn('status', ['deleting', 'deleted'])
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async routedDomains(): Promise<Domain[]> {
    return (
      await this.db('domains')
        .where({ routed: true })
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
    ).map(domainRow);
  }

  async domainsNeedingTls(before: Date): Promise<Domain[]> {
    const rows = await this.db('domains')
      .where({ routed: true })
      .andWhere((q) => q.where('tls_status', 'pending').orWhere((q2) => q2.where('tls_status', 'issued').andWhere('tls_expires_at', '<', before)))
      .orderBy('tls_expires_at');
    return rows.map(domainRow);
  }

  async deleteServiceDomains(serviceId: string): Promise<Domain[]> {
    return (await this.db('domains').where({ service_id: serviceId }).delete().returning('*')).map(domainRow);
  }
}
