import { countBy, type Knex } from '@pier/kit';

// What compute's /metrics gauges read at each scrape: one GROUP BY each, on indexed columns.

/** Services not deleted, by status. */
export function servicesByStatus(db: Knex): Promise<Record<string, number>> {
  return countBy(db('services').whereNull('deleted_at'), 'status');
}

/** Builds queued or running (the partial index builds_unfinished). */
export function unfinishedBuilds(db: Knex): Promise<Record<string, number>> {
  return countBy(db('builds').whereIn('status', ['queued', 'running']), 'status');
}
