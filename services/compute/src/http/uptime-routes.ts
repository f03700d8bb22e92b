import { defineRoute, vpcScope, errorResponses, FORBIDDEN_DESCRIPTION, type Route } from '@pier/kit';
import type { ComputeContext } from '../domain/context.ts';
import { disableUptime, enableUptime, getUptime } from '../domain/uptime/uptime.ts';
import { enableUptimeBody } from '../domain/uptime/uptime-input.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { uptimeJson, uptimeSchema } from './uptime-shapes.ts';

const UPTIME = `${BASE}/{serviceID}/uptime`;

const errors = errorResponses({
  400: 'Invalid settings; `field` names the offending field',
  403: FORBIDDEN_DESCRIPTION,
  404: 'Service not found',
  409: 'The service is being deleted, or cannot be checked over HTTP (`not_a_web_service`, `no_port`)',
});

export function uptimeRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: UPTIME,
      summary: 'Uptime monitor status: settings, current state, uptime over 24 hours and 7 days, recent incidents',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      responses: { 200: { description: 'The monitor (`enabled: false` and nulls when monitoring is off)', schema: uptimeSchema }, 404: errors[404] },
      handler: async ({ params }) => ({ status: 200, body: uptimeJson(await getUptime(ctx, vpcScope(params), params.serviceID)) }),
    }),
    defineRoute({
      method: 'post',
      path: UPTIME,
      summary: "Enable uptime monitoring: the service's public URL is requested every interval; on an enabled monitor, replaces its settings",
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: enableUptimeBody,
      responses: {
        201: { description: 'Monitoring enabled: the monitor', schema: uptimeSchema },
        200: { description: 'The settings of the enabled monitor replaced (its state, counts and incidents kept)', schema: uptimeSchema },
        ...errors,
      },
      handler: async ({ params, body }) => {
        const { view, created } = await enableUptime(ctx, vpcScope(params), params.serviceID, body);
        return { status: created ? 201 : 200, body: uptimeJson(view) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: UPTIME,
      summary: 'Disable uptime monitoring (its counts and incidents are forgotten); succeeds when already off',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      responses: { 204: { description: 'Monitoring is off' }, 403: errors[403], 404: errors[404], 409: { description: 'The service is being deleted' } },
      handler: async ({ params }) => {
        await disableUptime(ctx, vpcScope(params), params.serviceID);
        return { status: 204 };
      },
    }),
  ];
}
