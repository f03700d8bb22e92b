import type { Knex } from '@pier/kit';
import type { Position } from '../domain/pagination.ts';

/** Applies keyset pagination on (created_at, id) columns of `alias`, fetching one extra row. */
export function paged<T extends {}>(query: Knex.QueryBuilder<T>, alias: string, idColumn: string, limit: number, after?: Position) {
  if (after) {
    query.whereRaw(`(??, ??) > (?, ?)`, [`${alias}.created_at`, `${alias}.${idColumn}`, after.createdAt, after.id]);
  }
  return query.orderBy([`${alias}.created_at`, `${alias}.${idColumn}`]).limit(limit + 1);
}
