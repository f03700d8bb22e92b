import { z } from 'zod';
import { defineRoute, vpcScope, FORBIDDEN_DESCRIPTION, type Route } from '@pier/kit';
import { putEnvBody } from '../domain/env/env-input.ts';
import { deleteEnvVar, getEnv, putEnv } from '../domain/env/env.ts';
import type { ComputeContext } from '../domain/context.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { deploymentJson, envSchema, envVarJson } from './shapes.ts';

export function envRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}/env`,
      summary: 'Environment variables: literals with their value, references as secret_id/secret_key (never the value)',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      responses: { 200: { description: 'The full list, in order', schema: envSchema }, 404: { description: 'Service not found' } },
      handler: async ({ params }) => ({ status: 200, body: { variables: (await getEnv(ctx, vpcScope(params), params.serviceID)).map(envVarJson) } }),
    }),
    defineRoute({
      method: 'put',
      path: `${BASE}/{serviceID}/env`,
      summary: 'Replace the whole list; a deployed service rolls out with it',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: putEnvBody,
      responses: {
        200: { description: 'The list as stored, and the rollout it started (null before a first deploy)', schema: envSchema },
        400: { description: 'Invalid entry, or a reference to an unknown secret or key' },
        403: { description: FORBIDDEN_DESCRIPTION },
        404: { description: 'Service not found' },
        503: { description: 'The cluster or the secrets service cannot be reached; nothing was written' },
      },
      handler: async ({ params, body }) => {
        const r = await putEnv(ctx, vpcScope(params), params.serviceID, body);
        return { status: 200, body: { variables: r.variables.map(envVarJson), deployment: r.deployment ? deploymentJson(r.deployment) : null } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/{serviceID}/env/{envVarID}`,
      summary: 'Remove one variable; a deployed service rolls out without it',
      tag: 'services',
      access: 'Admin',
      params: serviceParams.extend({ envVarID: z.string() }),
      responses: {
        204: { description: 'Removed' },
        403: { description: FORBIDDEN_DESCRIPTION },
        404: { description: 'Service or variable not found' },
        503: { description: 'The cluster cannot be reached; nothing was written' },
      },
      handler: async ({ params }) => {
        await deleteEnvVar(ctx, vpcScope(params), params.serviceID, params.envVarID);
        return { status: 204 };
      },
    }),
  ];
}
