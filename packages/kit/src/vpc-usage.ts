import { z } from 'zod';
import { defineRoute, type Route } from './route.ts';

/**
 * Internal route each resource service serves so auth can refuse to delete a VPC that
 * still holds something. Only a service identity may call it.
 */
export function vpcUsageRoute(count: (vpcId: string) => Promise<number>): Route {
  return defineRoute({
    method: 'get',
    path: '/internal/vpcs/{vpcID}/usage',
    summary: 'How many live resources of this service the VPC holds',
    tag: 'internal',
    access: 'Service',
    params: z.object({ vpcID: z.string() }),
    responses: { 200: { description: 'count', schema: z.object({ count: z.number().int() }) } },
    handler: async ({ params }) => ({ status: 200, body: { count: await count(params.vpcID) } }),
  });
}
