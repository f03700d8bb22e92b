import { z } from 'zod';
import { LABEL_HINT, LABEL_PATTERN, MAX_EXPIRES_IN_DAYS, NAME_MAX, RESOURCE_NAME_HINT, RESOURCE_NAME_PATTERN } from '../domain/limits.ts';
import type { Page } from '@pier/kit';

// Request pieces. Messages are written to follow the field name, which the error body
// puts in front of them ("name: must be 1-63 characters").

const typed = (type: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${type}`),
});

/** A JSON object body whose unknown fields are refused (400 naming them), not ignored. */
export function strictBody<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
      if (issue.code === 'invalid_type') return 'request body must be a JSON object';
      return undefined;
    },
  });
}

export const resourceName = z
  .string(typed('a string'))
  .min(1, 'must not be empty')
  .max(NAME_MAX, `must be at most ${NAME_MAX} characters`)
  .regex(RESOURCE_NAME_PATTERN, `may contain only ${RESOURCE_NAME_HINT}`);

export const label = z
  .string(typed('a string'))
  .min(1, 'must not be empty')
  .max(NAME_MAX, `must be at most ${NAME_MAX} characters`)
  .regex(LABEL_PATTERN, `may contain only ${LABEL_HINT}`);

const positiveDays = `must be a positive integer (days, at most ${MAX_EXPIRES_IN_DAYS})`;
export const expiresInDays = z.number(typed('a positive integer')).int(positiveDays).min(1, positiveDays).max(MAX_EXPIRES_IN_DAYS, positiveDays);

// Path parameters are checked by the domain: an id that is not a UUID is 404, not 400.
export const workspacePath = z.object({ workspaceID: z.string() });

// Response pieces, for the OpenAPI document.

export const timestamp = z.string().describe('ISO 8601 UTC timestamp');
export const errorSchema = z.object({ error: z.string(), code: z.string(), field: z.string().optional() });

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}

export function listBody<R, T>(page: Page<R>, shape: (r: R) => T): { items: T[]; next_cursor: string | null } {
  return { items: page.items.map(shape), next_cursor: page.nextCursor };
}

export const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The error responses a route can give, for the OpenAPI document. */
export function errorResponses(...statuses: (400 | 401 | 403 | 404 | 409 | 503)[]): Record<number, { description: string; schema: z.ZodType }> {
  const text: Record<number, string> = {
    400: 'invalid request (the message names the field)',
    401: 'missing, invalid or expired credentials',
    403: 'insufficient workspace permissions',
    404: 'not found (also for workspaces the caller is not a member of)',
    409: 'conflict',
    503: 'a service this depends on cannot be reached; nothing was changed',
  };
  return Object.fromEntries([401, ...statuses].map((s) => [s, { description: text[s]!, schema: errorSchema }]));
}
