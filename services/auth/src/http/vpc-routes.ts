import { defineRoute, pageQuery, listBody, listOf, workspacePathParams, vpcPathParams, type Route } from '@pier/kit';
import type { AuthContext } from '../domain/context.ts';
import { createVpc, deleteVpc, getVpc, listVpcs } from '../domain/vpcs.ts';
import { resourceName, strictBody } from './schemas.ts';
import { errorResponses, vpcJson, vpcRecord } from './shapes.ts';

export function vpcRoutes(ctx: AuthContext): Route[] {
  const base = '/api/v1/workspaces/{workspaceID}/vpcs';
  return [
    defineRoute({
      method: 'get',
      path: base,
      summary: 'List the VPCs of the workspace',
      tag: 'vpcs',
      access: 'Member',
      params: workspacePathParams,
      query: pageQuery,
      responses: { 200: { description: 'VPCs', schema: listOf(vpcRecord) }, ...errorResponses(400, 404) },
      handler: async ({ params, query }) => ({ status: 200, body: listBody(await listVpcs(ctx, params.workspaceID, query), vpcJson) }),
    }),
    defineRoute({
      method: 'post',
      path: base,
      summary: 'Create a VPC; names are unique in the workspace',
      tag: 'vpcs',
      access: 'Admin',
      params: workspacePathParams,
      body: strictBody({ name: resourceName }),
      responses: { 201: { description: 'the new VPC', schema: vpcRecord }, ...errorResponses(400, 403, 404, 409) },
      handler: async ({ identity, params, body }) => ({ status: 201, body: vpcJson(await createVpc(ctx, identity.subject, params.workspaceID, body.name)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${base}/{vpcID}`,
      summary: 'One VPC',
      tag: 'vpcs',
      access: 'Member',
      params: vpcPathParams,
      responses: { 200: { description: 'the VPC', schema: vpcRecord }, ...errorResponses(404) },
      handler: async ({ params }) => ({ status: 200, body: vpcJson(await getVpc(ctx, params.workspaceID, params.vpcID)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${base}/{vpcID}`,
      summary: 'Delete an empty VPC (409 while it holds services, databases or secrets)',
      tag: 'vpcs',
      access: 'Admin',
      params: vpcPathParams,
      responses: { 204: { description: 'deleted' }, ...errorResponses(403, 404, 409, 503) },
      handler: async ({ identity, params }) => {
        await deleteVpc(ctx, identity.subject, params.workspaceID, params.vpcID);
        return { status: 204 };
      },
    }),
  ];
}
