import { InputError, isUuid } from '@pier/kit';

/**
 * Keyset pagination over (created_at, id): stable while rows are added, the cursor opaque
 * to clients (base64url of the last row's position).
 */
export interface Position {
  createdAt: Date;
  id: string;
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.createdAt.toISOString()}|${p.id}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): Position | undefined {
  if (cursor === undefined) return undefined;
  const invalid = new InputError('cursor: not a cursor returned by this list', 'invalid_cursor', { field: 'cursor' });
  const [at, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!at || !id || rest.length || !isUuid(id)) throw invalid;
  const createdAt = new Date(at);
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== at) throw invalid;
  return { createdAt, id };
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** Rows were fetched with `limit + 1`: the extra one says whether a next page exists. */
export function toPage<T extends { id: string; created_at: Date }>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { rows: kept, nextCursor: more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null };
}
