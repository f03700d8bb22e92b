import { InputError } from '@pier/kit';

/**
 * Keyset pagination over (created_at, id): stable while rows are added, and the cursor is
 * opaque to clients (base64url of the last row's position).
 */
export interface Position {
  createdAt: Date;
  id: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.createdAt.toISOString()}|${p.id}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): Position | undefined {
  if (cursor === undefined) return undefined;
  const invalid = new InputError('cursor: not a cursor returned by this list', 'invalid_cursor', { field: 'cursor' });
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const [at, id, ...rest] = text.split('|');
  if (!at || !id || rest.length) throw invalid;
  const createdAt = new Date(at);
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== at) throw invalid;
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) throw invalid;
  return { createdAt, id };
}

/** Rows were fetched with `limit + 1`; the extra one tells whether a next page exists. */
export function toPage<R, T>(rows: R[], limit: number, position: (r: R) => Position, shape: (r: R) => T): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { items: kept.map(shape), nextCursor: more && last ? encodeCursor(position(last)) : null };
}
