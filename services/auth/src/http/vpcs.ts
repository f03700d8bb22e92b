import { z } from 'zod';
import { defineRoute, type Route } from '@pier/kit';
import type { Vpcs } from '../domain/vpcs.ts';
import type { VpcRow } from '../domain/records.ts';
import { errorResponses, listBody, listOf, resourceName, strictBody, timestamp, workspacePath } from './schemas.ts';
import { pageQuery } from '@pier/kit';

const vpcRecord = z.object({ id: z.string(), workspace_id: z.string(), name: z.string(), created_at: timestamp });
const vpcJson = (v: VpcRow) => ({ id: v.id, workspace_id: v.workspace_id, name: v.name, created_at: v.created_at.toISOString() });
const vpcPath = workspacePath.extend({ vpcID: z.string() });

export function vpcRoutes(vpcs: Vpcs): Route[] {
  const base = '/api/v1/workspaces/{workspaceID}/vpcs';
  return [
    defineRoute({
      method: 'get',
      path: base,
      summary: 'List the VPCs of the workspace',
      tag: 'vpcs',
      access: 'Member',
      params: workspacePath,
      query: pageQuery,
      responses: { 200: { description: 'VPCs', schema: listOf(vpcRecord) }, ...errorResponses(400, 404) },
      handler: async ({ params, query }) => ({ status: 200, body: listBody(await vpcs.list(params.workspaceID, query), vpcJson) }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      summary: 'Create a VPC; names are unique in the workspace',
      tag: 'vpcs',
      access: 'Admin',
      params: workspacePath,
      body: strictBody({ name: resourceName }),
      responses: { 201: { description: 'the new VPC', schema: vpcRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => ({ status: 201, body: vpcJson(await vpcs.create(identity.subject, params.workspaceID, body.name)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{vpcID}`,
      summary: 'One VPC',
      tag: 'vpcs',
      access: 'Member',
      params: vpcPath,
      responses: { 200: { description: 'the VPC', schema: vpcRecord }, ...errorResponses(404) },
      handler: async ({ params }) => ({ status: 200, body: vpcJson(await vpcs.get(params.workspaceID, params.vpcID)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{vpcID}`,
      summary: 'Delete an empty VPC (409 while it holds services, databases or secrets)',
      tag: 'vpcs',
      access: 'Admin',
      params: vpcPath,
      responses: { 204: { description: 'deleted' }, ...errorResponses(403, 404, 409, 503) },
      handler: async ({ identity, params }) => {
        await vpcs.delete(identity.subject, params.workspaceID, params.vpcID);
        return { status: 204 };
      },
    }),
  ];
}
