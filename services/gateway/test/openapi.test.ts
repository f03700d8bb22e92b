import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { errorResponseSchema } from '../src/http/openapi.ts';

// Found by schemathesis (response_schema_conformance): the databases query endpoint answers
// `{"error","code":"sql_error","sqlstate"}` but the documented Error schema, which is closed
// (additionalProperties: false), had no `sqlstate`.
describe('the documented Error schema', () => {
  it('accepts every body the services write, and only those fields', () => {
    const json = z.toJSONSchema(errorResponseSchema, { target: 'draft-2020-12' }) as { properties: Record<string, unknown>; additionalProperties: unknown };
    expect(Object.keys(json.properties).sort()).toEqual(['code', 'error', 'field', 'sqlstate']);
    expect(json.additionalProperties).toBe(false);
    const strict = errorResponseSchema.strict();
    expect(strict.safeParse({ error: 'syntax error at or near "00"', code: 'sql_error', sqlstate: '42601' }).success).toBe(true);
    expect(strict.safeParse({ error: 'name: required', code: 'invalid_request', field: 'name' }).success).toBe(true);
    expect(strict.safeParse({ error: 'x', code: 'y', other: 1 }).success).toBe(false);
  });
});
