import { z } from 'zod';
import { defineRoute, pageQuery, listBody, listOf, workspacePathParams, type Route } from '@pier/kit';
import { createApiKey, listApiKeys, revokeApiKey } from '../domain/api-keys.ts';
import type { AuthContext } from '../domain/context.ts';
import { MAX_SCOPES, SCOPE_MAX } from '../domain/limits.ts';
import { expiresInDays, label, strictBody } from './schemas.ts';
import { createdKeyRecord, errorResponses, keyJson, keyRecord } from './shapes.ts';

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

export function apiKeyRoutes(ctx: AuthContext): Route[] {
  const base = '/api/v1/workspaces/{workspaceID}/api-keys';
  return [
    defineRoute({
      method: 'get',
      path: base,
      summary: 'List the live API keys of the workspace (key_prefix only, never the key; revoked keys are not listed)',
      tag: 'api-keys',
      access: 'Admin',
      params: workspacePathParams,
      query: pageQuery,
      responses: { 200: { description: 'keys', schema: listOf(keyRecord) }, ...errorResponses(400, 403, 404) },
      handler: async ({ params, query }) => ({ status: 200, body: listBody(await listApiKeys(ctx, params.workspaceID, query), keyJson) }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      summary: 'Create an API key acting as the caller; the response carries the key, once',
      tag: 'api-keys',
      access: 'Admin',
      params: workspacePathParams,
      body: createBody,
      responses: { 201: { description: 'the new key, with `key`', schema: createdKeyRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => {
        const scopes = [...new Set(body.scopes ?? [])];
        const created = await createApiKey(ctx, identity.subject, params.workspaceID, { name: body.name, expiresInDays: body.expires_in_days, scopes });
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
      params: workspacePathParams.extend({ keyID: z.string() }),
      responses: { 204: { description: 'revoked' }, ...errorResponses(403, 404) },
      handler: async ({ identity, params }) => {
        await revokeApiKey(ctx, identity.subject, params.workspaceID, params.keyID);
        return { status: 204 };
      },
    }),
  ];
}
