import { z } from 'zod';

// The error answers a route declares in defineRoute's `responses`, for the OpenAPI document.
// Every error body is errors.ts' errorBody: `error` and `code`, with `field` when the
// request's input is at fault. Each service writes its descriptions once, in one table,
// and each route picks the statuses it can answer.

/** The JSON body of an error answer. */
export const errorBodySchema = z.object({ error: z.string(), code: z.string() });
/** The same, documenting the `field` a validation error names. */
export const fieldErrorBodySchema = errorBodySchema.extend({ field: z.string().optional() });

/** The 403 every workspace-scoped route may answer, in the words all services document it with. */
export const FORBIDDEN_DESCRIPTION = 'insufficient workspace permissions';

/** One declared response of a route. */
export interface ResponseDoc {
  description: string;
  schema?: z.ZodType;
}

/** A service's error answers by status; with `schema`, each documents its body. */
export function errorResponses<S extends number>(descriptions: Record<S, string>, schema?: z.ZodType): Record<S, ResponseDoc> {
  const out = {} as Record<S, ResponseDoc>;
  for (const [status, description] of Object.entries(descriptions) as [string, string][]) {
    out[Number(status) as S] = schema ? { description, schema } : { description };
  }
  return out;
}

/** The answers of `table` for these statuses, in the order given. */
export function pickResponses<S extends number>(table: Record<S, ResponseDoc>, ...statuses: S[]): Record<number, ResponseDoc> {
  return Object.fromEntries(statuses.map((s) => [s, table[s]]));
}
