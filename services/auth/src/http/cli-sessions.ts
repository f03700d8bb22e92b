import { z } from 'zod';
import { defineRoute, type Route } from '@pier/kit';
import type { CliSessions } from '../domain/cli-sessions.ts';
import { DEFAULT_SESSION_DAYS } from '../domain/limits.ts';
import type { SessionRow } from '../domain/records.ts';
import { errorResponses, expiresInDays, iso, label, listBody, listOf, strictBody, timestamp } from './schemas.ts';
import { pageQuery } from '@pier/kit';

const sessionRecord = z.object({
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

const sessionJson = (s: SessionRow) => ({
  id: s.id,
  name: s.name,
  api_key_id: s.api_key_id,
  expires_at: s.expires_at.toISOString(),
  created_at: s.created_at.toISOString(),
  last_used_at: iso(s.last_used_at),
});

// Both fields are optional; send `{}` for an unnamed session with the default lifetime.
const createBody = strictBody({ name: label.optional(), expires_in_days: expiresInDays.optional() });

export function cliSessionRoutes(sessions: CliSessions): Route[] {
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
        const created = await sessions.create(identity.subject, { name: body.name, expiresInDays: body.expires_in_days, apiKeyId: identity.apiKeyId });
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
      handler: async ({ identity, query }) => ({ status: 200, body: listBody(await sessions.list(identity.subject, query), sessionJson) }),
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
        await sessions.revoke(identity.subject, params.sessionID);
        return { status: 204 };
      },
    }),
  ];
}
