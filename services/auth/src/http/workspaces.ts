import { z } from 'zod';
import { defineRoute, type Route } from '@pier/kit';
import { roles, pageQuery } from '@pier/kit';
import type { Workspaces } from '../domain/workspaces.ts';
import type { MyWorkspaceRow } from '../domain/records.ts';
import { errorResponses, listBody, listOf, resourceName, strictBody, timestamp, workspacePath } from './schemas.ts';

export const workspaceRecord = z.object({
  id: z.string(),
  name: z.string(),
  role: z.enum(roles).describe("the caller's role in this workspace"),
  created_at: timestamp,
});

export const workspaceJson = (w: MyWorkspaceRow) => ({ id: w.id, name: w.name, role: w.role, created_at: w.created_at.toISOString() });

export function workspaceRoutes(workspaces: Workspaces): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/workspaces',
      summary: 'List the workspaces the caller belongs to, with their role in each',
      tag: 'workspaces',
      access: 'User',
      query: pageQuery,
      responses: { 200: { description: 'workspaces', schema: listOf(workspaceRecord) }, ...errorResponses(400) },
      handler: async ({ identity, query }) => ({
        status: 200,
        body: listBody(await workspaces.list(identity.subject, query), workspaceJson),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/workspaces',
      summary: 'Create a workspace; the caller becomes its owner and it gets a VPC named "default"',
      tag: 'workspaces',
      access: 'User',
      body: strictBody({ name: resourceName }),
      responses: {
        201: { description: 'the new workspace', schema: workspaceRecord.extend({ default_vpc_id: z.string() }) },
        ...errorResponses(400),
      },
      handler: async ({ identity, body }) => {
        const { workspace, vpc } = await workspaces.create(identity.subject, body.name);
        return { status: 201, body: { ...workspaceJson(workspace), default_vpc_id: vpc.id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/workspaces/{workspaceID}',
      summary: "One workspace, with the caller's role in it",
      tag: 'workspaces',
      access: 'Member',
      params: workspacePath,
      responses: { 200: { description: 'the workspace', schema: workspaceRecord }, ...errorResponses(404) },
      handler: async ({ identity, params }) => ({ status: 200, body: workspaceJson(await workspaces.get(identity.subject, params.workspaceID)) }),
    }),
  ];
}
