import { z } from 'zod';
import { defineRoute, type Route } from '@pier/kit';

/**
 * Who the token belongs to (the CLI's `pier whoami`). Answered from the identity auth
 * signed for this request, so it costs no query; workspaces and roles are listed by
 * GET /api/v1/workspaces.
 */
export function meRoutes(): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/me',
      summary: 'The user the token acts as',
      tag: 'users',
      access: 'User',
      responses: {
        200: { description: 'the caller', schema: z.object({ id: z.string().describe('user id'), email: z.string().nullable() }) },
      },
      handler: async ({ identity }) => ({ status: 200, body: { id: identity.subject, email: identity.email ?? null } }),
    }),
  ];
}
