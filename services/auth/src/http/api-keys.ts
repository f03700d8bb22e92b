import { z } from 'zod';
import { defineRoute, type Route } from '@pier/kit';
import type { ApiKeys } from '../domain/api-keys.ts';
import { MAX_SCOPES, SCOPE_MAX } from '../domain/limits.ts';
import type { ApiKeyRow } from '../domain/records.ts';
import { errorResponses, expiresInDays, iso, label, listBody, listOf, strictBody, timestamp, workspacePath } from './schemas.ts';
import { pageQuery } from '@pier/kit';

const scope = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(SCOPE_MAX, `must be at most ${SCOPE_MAX} characters`)
  .regex(/^[A-Za-z0-9:._*/-]+$/, 'may contain only letters, digits and : . _ * / -');

const createBody = strictBody({
  name: label,
  expires_in_days: expiresInDays.optional(),
  scopes: z
    .array(scope, { error: (issue) => (issue.code === 'invalid_type' ? 'must be an array of strings' : undefined) })
    .max(MAX_SCOPES, `must hold at most ${MAX_SCOPES} scopes`)
    .optional(),
});

const keyRecord = z.object({
  id: z.string(),
  workspace_id: z.string(),
  name: z.string(),
  key_prefix: z.string().describe('first 12 characters of the key'),
  scopes: z.array(z.string()).describe('stored and returned; restricts nothing at present'),
  expires_at: timestamp.nullable().describe('null for a key that never expires'),
  created_at: timestamp,
  last_used_at: timestamp.nullable().describe('null until the key is first used; written within about a second of a use'),
});
const createdKeyRecord = keyRecord.extend({ key: z.string().describe('the full key, sk- and 64 hex characters; returned only here') });

const keyJson = (k: ApiKeyRow) => ({
  id: k.id,
  workspace_id: k.workspace_id,
  name: k.name,
  key_prefix: k.key_prefix,
  scopes: k.scopes,
  expires_at: iso(k.expires_at),
  created_at: k.created_at.toISOString(),
  last_used_at: iso(k.last_used_at),
});

export function apiKeyRoutes(apiKeys: ApiKeys): Route[] {
  const base = '/api/v1/workspaces/{workspaceID}/api-keys';
  return [
    defineRoute({
      method: 'get',
      path: base,
      summary: 'List the live API keys of the workspace (key_prefix only, never the key; revoked keys are not listed)',
      tag: 'api-keys',
      access: 'Admin',
      params: workspacePath,
      query: pageQuery,
      responses: { 200: { description: 'keys', schema: listOf(keyRecord) }, ...errorResponses(400, 403, 404) },
      handler: async ({ params, query }) => ({ status: 200, body: listBody(await apiKeys.list(params.workspaceID, query), keyJson) }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      summary: 'Create an API key acting as the caller; the response carries the key, once',
      tag: 'api-keys',
      access: 'Admin',
      params: workspacePath,
      body: createBody,
      responses: { 201: { description: 'the new key, with `key`', schema: createdKeyRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => {
        const scopes = [...new Set(body.scopes ?? [])];
        const created = await apiKeys.create(identity.subject, params.workspaceID, { name: body.name, expiresInDays: body.expires_in_days, scopes });
        return { status: 201, body: { ...keyJson(created), key: created.key } };
      },
      shownOnce: ['key'],
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{keyID}`,
      summary: 'Revoke an API key for good; its next request gets 401',
      tag: 'api-keys',
      access: 'Admin',
      params: workspacePath.extend({ keyID: z.string() }),
      responses: { 204: { description: 'revoked' }, ...errorResponses(403, 404) },
      handler: async ({ identity, params }) => {
        await apiKeys.revoke(identity.subject, params.workspaceID, params.keyID);
        return { status: 204 };
      },
    }),
  ];
}
