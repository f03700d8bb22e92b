import { z } from 'zod';
import { defineRoute, pageQuery, listBody, listOf, type Route } from '@pier/kit';
import { createCliSession, listCliSessions, revokeCliSession } from '../domain/cli-sessions.ts';
import type { AuthContext } from '../domain/context.ts';
import { DEFAULT_SESSION_DAYS } from '../domain/limits.ts';
import { expiresInDays, label, strictBody } from './schemas.ts';
import { errorResponses, sessionJson, sessionRecord } from './shapes.ts';

// Both fields are optional; send `{}` for an unnamed session with the default lifetime.
const createBody = strictBody({ name: label.optional(), expires_in_days: expiresInDays.optional() });

export function cliSessionRoutes(ctx: AuthContext): Route[] {
  const base = '/api/v1/cli-sessions';
  return [
    defineRoute({
      method: 'post',
      path: base,
      summary: `Start a CLI session for the caller; the response carries the token, once (expires after expires_in_days, default ${DEFAULT_SESSION_DAYS}; a caller using an API key gets a session bound to that key, expiring no later than it)`,
      tag: 'cli-sessions',
      access: 'User',
      body: createBody,
      responses: {
        201: {
          description: 'the new session, with `token`',
          schema: sessionRecord.extend({ token: z.string().describe('64 hex characters; returned only here') }),
        },
        ...errorResponses(400),
      },
      handler: async ({ identity, body }) => {
        const created = await createCliSession(ctx, identity.subject, { name: body.name, expiresInDays: body.expires_in_days, apiKeyId: identity.apiKeyId });
        return { status: 201, body: { ...sessionJson(created), token: created.token } };
      },
      shownOnce: ['token'],
    }),
    defineRoute({
      method: 'get',
      path: base,
      summary: "List the caller's CLI sessions that are not revoked",
      tag: 'cli-sessions',
      access: 'User',
      query: pageQuery,
      responses: { 200: { description: 'sessions', schema: listOf(sessionRecord) }, ...errorResponses(400) },
      handler: async ({ identity, query }) => ({ status: 200, body: listBody(await listCliSessions(ctx, identity.subject, query), sessionJson) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{sessionID}`,
      summary: "Revoke one of the caller's CLI sessions",
      tag: 'cli-sessions',
      access: 'User',
      params: z.object({ sessionID: z.string() }),
      responses: { 204: { description: 'revoked' }, ...errorResponses(404) },
      handler: async ({ identity, params }) => {
        await revokeCliSession(ctx, identity.subject, params.sessionID);
        return { status: 204 };
      },
    }),
  ];
}
