import type { z } from 'zod';
import { InputError } from './errors.ts';

// Turning a request's path, query and body into the values a route's schemas describe,
// with errors that name the field (a 400, never a 500).

/** Turns the first problems zod found into one message that names the field. */
export function describeZodError(error: z.ZodError, where: string): InputError {
  const issues = error.issues.slice(0, 5);
  const parts = issues.map((i) => {
    const field = i.path.length ? i.path.join('.') : where;
    return `${field}: ${i.message}`;
  });
  const first = issues[0];
  const field = first && first.path.length ? first.path.join('.') : undefined;
  return new InputError(parts.join('; '), 'invalid_request', field ? { field } : undefined);
}

export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw describeZodError(parsed.error, where);
  return parsed.data;
}

/**
 * Refuses U+0000 anywhere in validated input (strings and object keys, at any depth).
 * PostgreSQL text and jsonb cannot store it, so without this check such a value reaches
 * the INSERT and fails there as a 500; it runs after the route's own schema, so a field
 * with its own rule for NUL keeps its message.
 */
export function refuseNul(value: unknown, where: string): void {
  const path = nulPath(value, []);
  if (!path) return;
  const field = path.length ? path.join('.') : undefined;
  throw new InputError(`${field ?? where}: must not contain NUL characters (U+0000)`, 'invalid_request', field ? { field } : undefined);
}

function nulPath(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key.includes('\0')) return [...path, key];
      const found = nulPath(v, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
