import { z } from 'zod';
import { defineRoute, pageQuery, listBody, listOf, workspacePathParams, type Route } from '@pier/kit';
import type { AuthContext } from '../domain/context.ts';
import { createWorkspace, getWorkspace, listWorkspaces } from '../domain/workspaces.ts';
import { resourceName, strictBody } from './schemas.ts';
import { errorResponses, workspaceJson, workspaceRecord } from './shapes.ts';

export function workspaceRoutes(ctx: AuthContext): Route[] {
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
        body: listBody(await listWorkspaces(ctx, identity.subject, query), workspaceJson),
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
        const { workspace, vpc } = await createWorkspace(ctx, identity.subject, body.name);
        return { status: 201, body: { ...workspaceJson(workspace), default_vpc_id: vpc.id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/workspaces/{workspaceID}',
      summary: "One workspace, with the caller's role in it",
      tag: 'workspaces',
      access: 'Member',
      params: workspacePathParams,
      responses: { 200: { description: 'the workspace', schema: workspaceRecord }, ...errorResponses(404) },
      handler: async ({ identity, params }) => ({ status: 200, body: workspaceJson(await getWorkspace(ctx, identity.subject, params.workspaceID)) }),
    }),
  ];
}
