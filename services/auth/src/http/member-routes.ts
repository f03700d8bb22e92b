import { z } from 'zod';
import { defineRoute, pageQuery, roles, listBody, listOf, workspacePathParams, type Route } from '@pier/kit';
import type { AuthContext } from '../domain/context.ts';
import { addMember, changeMemberRole, listMembers, removeMember } from '../domain/members.ts';
import { strictBody } from './schemas.ts';
import { errorResponses, memberJson, memberRecord } from './shapes.ts';

const role = z.enum(roles, {
  error: (issue) => (issue.input === undefined ? 'is required' : `must be one of ${roles.join(', ')}`),
});

const email = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .max(254, 'must be at most 254 characters')
  .email('must be an e-mail address');

const memberPath = workspacePathParams.extend({ userID: z.string() });

const MANAGE = 'Owner or Admin; only an Owner may grant, change or remove the owner role, and the last owner stays';

export function memberRoutes(ctx: AuthContext): Route[] {
  const base = '/api/v1/workspaces/{workspaceID}/members';
  return [
    defineRoute({
      method: 'get',
      path: base,
      summary: 'List the members of the workspace',
      tag: 'members',
      access: 'Member',
      params: workspacePathParams,
      query: pageQuery,
      responses: { 200: { description: 'members', schema: listOf(memberRecord) }, ...errorResponses(400, 404) },
      handler: async ({ params, query }) => ({
        status: 200,
        body: listBody(await listMembers(ctx, params.workspaceID, query), memberJson),
      }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      summary: `Add a member by e-mail (the user is created when unknown). ${MANAGE}`,
      tag: 'members',
      access: 'Admin',
      params: workspacePathParams,
      body: strictBody({ email, role }),
      responses: { 201: { description: 'the new member', schema: memberRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => ({
        status: 201,
        body: memberJson(await addMember(ctx, identity.subject, params.workspaceID, body.email, body.role)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: `${base}/{userID}`,
      summary: `Change a member's role. ${MANAGE}`,
      tag: 'members',
      access: 'Admin',
      params: memberPath,
      body: strictBody({ role }),
      responses: { 200: { description: 'the member', schema: memberRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => ({
        status: 200,
        body: memberJson(await changeMemberRole(ctx, identity.subject, params.workspaceID, params.userID, body.role)),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{userID}`,
      summary: `Remove a member; their API keys stop working in this workspace at once. ${MANAGE}`,
      tag: 'members',
      access: 'Admin',
      params: memberPath,
      responses: { 204: { description: 'removed' }, ...errorResponses(403, 404, 409) },
      handler: async ({ identity, params }) => {
        await removeMember(ctx, identity.subject, params.workspaceID, params.userID);
        return { status: 204 };
      },
    }),
  ];
}
