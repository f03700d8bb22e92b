import { countBy, type Knex } from '@pier/kit';

/** Databases not deleted, by status: what the databases service's /metrics gauge reads at each scrape. */
export function databasesByStatus(db: Knex): Promise<Record<string, number>> {
  return countBy(db('databases').whereNull('deleted_at'), 'status');
}
