import { z } from 'zod';

// Query parameters that are not strings, parsed one way everywhere.

/** A yes/no query parameter: `true`/`false` (or `1`/`0`); `fallback` when absent. */
export function queryFlag(fallback: boolean, description: string) {
  return z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? fallback : v === 'true' || v === '1'))
    .describe(`${description} (default ${fallback})`);
}

/** A repeatable query parameter (`?command=sh&command=-c`): always an array, absent is empty. */
export function queryList(item: z.ZodString, opts: { max: number; description: string }) {
  return z
    .union([item, z.array(item).max(opts.max, `at most ${opts.max} values`)])
    .optional()
    .transform((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]))
    .describe(opts.description);
}
