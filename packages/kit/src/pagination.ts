import { z } from 'zod';
import type { Knex } from 'knex';
import { InputError } from './errors.ts';
import { isUuid } from './db.ts';

// Every list in the API pages the same way: `limit` and an opaque `cursor` in, `items` and
// `next_cursor` out. The cursor is the keyset position (created_at, id) of the last item
// returned, so pages are stable while rows are added.

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

const LIMIT_RULE = `must be an integer from 1 to ${MAX_LIMIT}`;

/** The query parameters of every list; routes extend it with their own filters. */
export const pageQuery = z.object({
  limit: z.coerce
    .number({ error: LIMIT_RULE })
    .int(LIMIT_RULE)
    .min(1, LIMIT_RULE)
    .max(MAX_LIMIT, LIMIT_RULE)
    .default(DEFAULT_LIMIT)
    .describe(`Page size, 1-${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
  cursor: z
    .string({ error: 'must be a single cursor string' })
    .max(200, 'is not a cursor returned by this list')
    .optional()
    .describe('`next_cursor` of the previous page'),
});

export interface PageRequest {
  limit: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A page's JSON, for the OpenAPI document: `items` of `item`, and `next_cursor`. */
export const listOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), next_cursor: z.string().nullable() });

/** A page as the API answers it, each item shaped by `shape`. */
export function listBody<R, T>(page: Page<R>, shape: (r: R) => T): { items: T[]; next_cursor: string | null } {
  return { items: page.items.map(shape), next_cursor: page.nextCursor };
}

/**
 * A keyset position. `at` is created_at in whole microseconds since the epoch: a JS Date
 * keeps only milliseconds, and a cursor rounded down to them would repeat the last row of
 * a page at the top of the next.
 */
export interface Position {
  at: number;
  id: string;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.at}|${p.id}`).toString('base64url');
}

/** The position a cursor names; anything this API did not hand out is a 400 `invalid_cursor`. */
export function decodeCursor(cursor: string | undefined): Position | undefined {
  if (cursor === undefined) return undefined;
  const [at, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (rest.length === 0 && at && /^\d{1,16}$/.test(at) && id && isUuid(id)) return { at: Number(at), id: id.toLowerCase() };
  throw new InputError('cursor: not a cursor returned by this list', 'invalid_cursor', { field: 'cursor' });
}

export interface KeysetOptions {
  /** Qualified column names when the query joins (`k.created_at`, `m.user_id`). */
  createdAt?: string;
  id?: string;
  /** `asc` (oldest first, the default) or `desc` (newest first, for histories). */
  order?: 'asc' | 'desc';
}

const CURSOR_COLUMN = 'pier_cursor_at';

/**
 * Runs `query` as one page: after the cursor's position, in keyset order, one row more than
 * `limit` to learn whether a next page exists. Rows come back as the query selects them.
 */
export async function keysetPage<Row extends object>(query: Knex.QueryBuilder, page: PageRequest, opts: KeysetOptions = {}): Promise<Page<Row>> {
  const createdAt = opts.createdAt ?? 'created_at';
  const id = opts.id ?? 'id';
  const order = opts.order ?? 'asc';
  const after = decodeCursor(page.cursor);
  if (after) {
    // Integer microseconds added to the epoch: exact, where a float seconds value would round.
    query.whereRaw(`(??, ??) ${order === 'asc' ? '>' : '<'} (timestamptz 'epoch' + ? * interval '1 microsecond', ?)`, [createdAt, id, after.at, after.id]);
  }
  // A query that selects nothing yet would otherwise select only the cursor column.
  const selects = (query as unknown as { _statements: { grouping: string }[] })._statements.some((s) => s.grouping === 'columns');
  if (!selects) query.select('*');
  const rows = (await query
    .select(query.client.raw(`(extract(epoch from ??) * 1000000)::bigint as ${CURSOR_COLUMN}`, [createdAt]))
    .orderBy([
      { column: createdAt, order },
      { column: id, order },
    ])
    .limit(page.limit + 1)) as (Row & Record<string, unknown>)[];
  const more = rows.length > page.limit;
  const kept = more ? rows.slice(0, page.limit) : rows;
  const idKey = id.includes('.') ? id.slice(id.lastIndexOf('.') + 1) : id;
  const last = kept[kept.length - 1];
  const nextCursor = more && last ? encodeCursor({ at: Number(last[CURSOR_COLUMN]), id: String(last[idKey]) }) : null;
  for (const r of kept) delete r[CURSOR_COLUMN];
  return { items: kept, nextCursor };
}

/** The same page with its items shaped (rows to records). */
export function mapPage<A, B>(page: Page<A>, shape: (a: A) => B): Page<B> {
  return { items: page.items.map(shape), nextCursor: page.nextCursor };
}
