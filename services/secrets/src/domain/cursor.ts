import { InputError } from '@pier/kit';

// List cursors are opaque to clients: the position after the last item returned.

export function encodeCursor(seq: number): string {
  return Buffer.from(JSON.stringify({ s: seq })).toString('base64url');
}

export function decodeCursor(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s?: unknown };
    if (typeof parsed.s === 'number' && Number.isSafeInteger(parsed.s) && parsed.s >= 0) return parsed.s;
  } catch {
    // fall through to the error below
  }
  throw new InputError('cursor: not a cursor this list returned', 'invalid_cursor', { field: 'cursor' });
}
