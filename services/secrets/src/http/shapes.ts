// The JSON secrets answers with, and the zod schemas that document it in OpenAPI.
import { z } from 'zod';
import type { SecretRecord } from '../domain/records.ts';

/** A secret as the API shows it. There is no `values` field, by design: values are write-only. */
export const secretSchema = z.object({
  id: z.string().describe('Secret identifier ({secretID})'),
  workspace_id: z.string(),
  vpc_id: z.string(),
  name: z.string(),
  keys: z.array(z.string()).describe('Names of the keys the secret holds, sorted. Values are never returned.'),
  created_at: z.string().describe('ISO 8601 UTC'),
  updated_at: z.string().describe('ISO 8601 UTC'),
});

export const secretListSchema = z.object({
  items: z.array(secretSchema),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
});

export function secretJson(r: SecretRecord): z.infer<typeof secretSchema> {
  return {
    id: r.id,
    workspace_id: r.workspaceId,
    vpc_id: r.vpcId,
    name: r.name,
    keys: r.keys,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}
