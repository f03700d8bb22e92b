import { z } from 'zod';
import { LABEL_HINT, LABEL_PATTERN, MAX_EXPIRES_IN_DAYS, NAME_MAX, RESOURCE_NAME_HINT, RESOURCE_NAME_PATTERN } from '../domain/limits.ts';

// Request pieces (responses are in shapes.ts). Messages are written to follow the field name, which the error body
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
