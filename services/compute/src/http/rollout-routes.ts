import { z } from 'zod';
import { defineRoute, pageQuery, vpcScope, listOf, FORBIDDEN_DESCRIPTION, listBody, type Route } from '@pier/kit';
import { deploy, listDeployments, restart, rollback } from '../domain/services/deployments.ts';
import type { ComputeContext } from '../domain/context.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { deploymentJson, deploymentSchema, rolloutSchema, serviceJson } from './shapes.ts';
import type { RolloutResult } from '../domain/services/rollouts.ts';

const accepted = (ctx: ComputeContext, r: RolloutResult) => ({
  status: 202,
  body: { service: serviceJson(r.service, ctx.edge), deployment: deploymentJson(r.deployment) },
});

const responses = {
  202: {
    description: 'Rollout requested: the service (status `deploying`/`restarting`, or `crashed` when it failed at once) and the new deployment',
    schema: rolloutSchema,
  },
  400: { description: 'Invalid input' },
  403: { description: FORBIDDEN_DESCRIPTION },
  404: { description: 'Service (or deployment) not found' },
  409: { description: 'The service is being deleted, or has nothing to restart' },
  503: { description: 'The cluster or the secrets service cannot be reached; nothing was written' },
};

export function rolloutRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'post',
      path: `${BASE}/{serviceID}/deploy`,
      summary: "Deploy an image: a bare tag goes on the service's image repository, a full reference is used as it stands",
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({ image_tag: z.string().min(1).max(512) }),
      responses,
      handler: async ({ params, body }) => accepted(ctx, await deploy(ctx, vpcScope(params), params.serviceID, body.image_tag)),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{serviceID}/restart`,
      summary: 'Restart on the same image (new containers); status `restarting`, then back',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      responses,
      handler: async ({ params }) => accepted(ctx, await restart(ctx, vpcScope(params), params.serviceID)),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{serviceID}/rollback`,
      summary: "Roll back to an earlier deployment's image; the rollback is itself a new deployment",
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({ deployment_id: z.string().min(1) }),
      responses,
      handler: async ({ params, body }) => accepted(ctx, await rollback(ctx, vpcScope(params), params.serviceID, body.deployment_id)),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}/deployments`,
      summary: 'Deployment history, newest first',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of deployments', schema: listOf(deploymentSchema) },
        400: { description: 'Invalid `limit` or `cursor`; `field` names it' },
        404: responses[404],
      },
      handler: async ({ params, query }) => {
        const page = await listDeployments(ctx, vpcScope(params), params.serviceID, query);
        return { status: 200, body: listBody(page, deploymentJson) };
      },
    }),
  ];
}
