import { z } from 'zod';
import { NotFoundError, defineRoute, pageQuery, vpcScope, listOf, vpcPathParams, errorResponses, FORBIDDEN_DESCRIPTION, listBody, type Route } from '@pier/kit';
import { createServiceBody, patchServiceBody } from '../domain/services/service-config.ts';
import { createService, deleteService, getService, listServices, updateService } from '../domain/services/services.ts';
import type { ComputeContext } from '../domain/context.ts';
import { serviceJson, serviceSchema } from './shapes.ts';

export const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services';
/** How many cluster API requests a read made: the benchmark checks that a list makes one. */
export const CLUSTER_CALLS_HEADER = 'x-pier-cluster-calls';

export const serviceParams = vpcPathParams.extend({ serviceID: z.string() });

const errors = errorResponses({
  400: 'Invalid input; `field` names the offending field',
  403: FORBIDDEN_DESCRIPTION,
  404: 'Service not found',
  503: 'The cluster (or the secrets service) cannot be reached; nothing was written',
});

export function serviceRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BASE,
      summary: 'List services in the VPC with live status (deleted ones excluded)',
      tag: 'services',
      access: 'Member',
      params: vpcPathParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of services', schema: listOf(serviceSchema) },
        400: { description: 'Invalid `limit` or `cursor`; `field` names it' },
        503: errors[503],
      },
      handler: async ({ params, query }) => {
        const page = await listServices(ctx, vpcScope(params), query);
        return {
          status: 200,
          body: listBody(page, (s) => serviceJson(s, ctx.edge)),
          headers: { [CLUSTER_CALLS_HEADER]: String(page.clusterCalls) },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: BASE,
      summary: 'Create a service (with `image`, its first deployment starts at once)',
      tag: 'services',
      access: 'Admin',
      params: vpcPathParams,
      body: createServiceBody,
      responses: {
        201: { description: 'The service', schema: serviceSchema },
        400: errors[400],
        403: errors[403],
        409: { description: 'A service of that name exists in the VPC' },
        503: errors[503],
      },
      handler: async ({ params, body }) => ({ status: 201, body: serviceJson(await createService(ctx, vpcScope(params), body), ctx.edge) }),
      // A dead attempt's unfinished service was removed by the reconciler's first pass.
      replay: async ({ params }, id) => {
        const made = await getService(ctx, vpcScope(params), id).catch((err: unknown) => {
          if (err instanceof NotFoundError) return undefined;
          throw err;
        });
        return made && { status: 201, body: serviceJson(made.service, ctx.edge) };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}`,
      summary: 'Service detail with live status (a deleted service reads `deleted`)',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      responses: { 200: { description: 'The service', schema: serviceSchema }, 404: errors[404], 503: errors[503] },
      handler: async ({ params }) => {
        const { service, clusterCalls } = await getService(ctx, vpcScope(params), params.serviceID);
        return { status: 200, body: serviceJson(service, ctx.edge), headers: { [CLUSTER_CALLS_HEADER]: String(clusterCalls) } };
      },
    }),
    defineRoute({
      method: 'patch',
      path: `${BASE}/{serviceID}`,
      summary: 'Update configuration (a deployed service rolls out with it)',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: patchServiceBody,
      responses: { 200: { description: 'The service', schema: serviceSchema }, 400: errors[400], 403: errors[403], 404: errors[404], 503: errors[503] },
      handler: async ({ params, body }) => ({ status: 200, body: serviceJson(await updateService(ctx, vpcScope(params), params.serviceID, body), ctx.edge) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/{serviceID}`,
      summary: 'Delete the service: `deleting` now, `deleted` once the cluster is torn down',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      responses: {
        202: { description: 'Teardown started', schema: serviceSchema },
        403: errors[403],
        404: errors[404],
        409: { description: 'The service is already deleted (`service_deleted`)' },
        503: errors[503],
      },
      handler: async ({ params }) => ({ status: 202, body: serviceJson(await deleteService(ctx, vpcScope(params), params.serviceID), ctx.edge) }),
    }),
  ];
}
