// The JSON auth answers with, and the zod schemas that document it in OpenAPI. Records
// (domain/records.ts) are never sent as they stand: no hash, no user id of a key's owner.
import { z } from 'zod';
import { errorResponses as errorTable, FORBIDDEN_DESCRIPTION, fieldErrorBodySchema, pickResponses, roles } from '@pier/kit';
import type { ApiKeyRow, MemberRow, MyWorkspaceRow, SessionRow, VpcRow } from '../domain/records.ts';

export const timestamp = z.string().describe('ISO 8601 UTC timestamp');
const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

const ERRORS = errorTable(
  {
    400: 'invalid request (the message names the field)',
    401: 'missing, invalid or expired credentials',
    403: FORBIDDEN_DESCRIPTION,
    404: 'not found (also for workspaces the caller is not a member of)',
    409: 'conflict',
    503: 'a service this depends on cannot be reached; nothing was changed',
  },
  fieldErrorBodySchema,
);

/** The error responses a route can give (401 always), for the OpenAPI document. */
export function errorResponses(...statuses: (400 | 401 | 403 | 404 | 409 | 503)[]) {
  return pickResponses(ERRORS, 401, ...statuses);
}

export const workspaceRecord = z.object({
  id: z.string(),
  name: z.string(),
  role: z.enum(roles).describe("the caller's role in this workspace"),
  created_at: timestamp,
});
export const workspaceJson = (w: MyWorkspaceRow) => ({ id: w.id, name: w.name, role: w.role, created_at: w.created_at.toISOString() });

export const memberRecord = z.object({ user_id: z.string(), email: z.string(), role: z.enum(roles), created_at: timestamp });
export const memberJson = (m: MemberRow) => ({ user_id: m.user_id, email: m.email, role: m.role, created_at: m.created_at.toISOString() });

export const vpcRecord = z.object({ id: z.string(), workspace_id: z.string(), name: z.string(), created_at: timestamp });
export const vpcJson = (v: VpcRow) => ({ id: v.id, workspace_id: v.workspace_id, name: v.name, created_at: v.created_at.toISOString() });

export const keyRecord = z.object({
  id: z.string(),
  workspace_id: z.string(),
  name: z.string(),
  key_prefix: z.string().describe('first 12 characters of the key'),
  scopes: z.array(z.string()).describe('stored and returned; restricts nothing at present'),
  expires_at: timestamp.nullable().describe('null for a key that never expires'),
  created_at: timestamp,
  last_used_at: timestamp.nullable().describe('null until the key is first used; written within about a second of a use'),
});
export const createdKeyRecord = keyRecord.extend({ key: z.string().describe('the full key, sk- and 64 hex characters; returned only here') });
export const keyJson = (k: ApiKeyRow) => ({
  id: k.id,
  workspace_id: k.workspace_id,
  name: k.name,
  key_prefix: k.key_prefix,
  scopes: k.scopes,
  expires_at: iso(k.expires_at),
  created_at: k.created_at.toISOString(),
  last_used_at: iso(k.last_used_at),
});

export const sessionRecord = z.object({
  id: z.string(),
  name: z.string().nullable(),
  api_key_id: z
    .string()
    .nullable()
    .describe('the API key the session was started with: revoking the key revokes the session, and it expires no later than the key; null for none'),
  expires_at: timestamp,
  created_at: timestamp,
  last_used_at: timestamp.nullable(),
});
export const sessionJson = (s: SessionRow) => ({
  id: s.id,
  name: s.name,
  api_key_id: s.api_key_id,
  expires_at: s.expires_at.toISOString(),
  created_at: s.created_at.toISOString(),
  last_used_at: iso(s.last_used_at),
});
