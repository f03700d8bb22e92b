import { z } from 'zod';
import { defineRoute, pageQuery, vpcScope, listOf, errorResponses, FORBIDDEN_DESCRIPTION, type Route } from '@pier/kit';
import type { ComputeContext } from '../domain/context.ts';
import { addHostname, isApex, listHostnames, removeHostname, verifyHostname } from '../domain/hostnames/hostnames.ts';
import type { Hostname } from '../domain/hostnames/hostname-store-port.ts';
import { serviceHost } from '../domain/hostnames/hostname-format.ts';
import type { Service } from '../domain/records.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { hostnameJson, hostnameSchema } from './hostname-shapes.ts';

const DOMAINS = `${BASE}/{serviceID}/domains`;
const domainParams = serviceParams.extend({ domainID: z.string() });

const errors = errorResponses({
  400: "Invalid hostname (`field`: `hostname`): not a fully qualified name, a wildcard (`wildcard_not_supported`), or under the platform's apps domain (`reserved_hostname`)",
  403: FORBIDDEN_DESCRIPTION,
  404: 'Service or domain not found',
  503: 'The edge (or the DNS resolvers) cannot be reached, or the edge is turned off; nothing was changed',
});

/** The JSON of domains of one service: the edge's addresses are asked once, and only for an apex. */
async function render(ctx: ComputeContext, service: Service, domains: Hostname[]) {
  const edgeAddresses = ctx.edge.port && domains.some((d) => isApex(d.hostname)) ? await ctx.edge.port.addresses() : [];
  const targets = { serviceHost: serviceHost(service, ctx.edge.settings.appsDomain), edgeAddresses };
  return domains.map((d) => hostnameJson(d, targets));
}

export function hostnameRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: DOMAINS,
      summary: 'List custom domains, in the order they were attached',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of domains', schema: listOf(hostnameSchema) },
        400: { description: 'Invalid `limit` or `cursor`; `field` names it' },
        404: errors[404],
      },
      handler: async ({ params, query }) => {
        const { service, page } = await listHostnames(ctx, vpcScope(params), params.serviceID, query);
        return { status: 200, body: { items: await render(ctx, service, page.items), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'post',
      path: DOMAINS,
      summary: 'Claim a custom domain: create the `verification` TXT record and the `routing` record shown, then call verify before `claim_expires_at`',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({
        hostname: z.string().min(1).max(253).describe('A fully qualified hostname such as www.example.com (unicode names are stored as punycode)'),
      }),
      responses: {
        201: {
          description: 'The domain, `pending`: a claim other services may hold on the same hostname too, until one of them verifies',
          schema: hostnameSchema,
        },
        ...errors,
        409: {
          description:
            'The hostname is verified for a service, in any workspace, or this service claims it already (`hostname_taken`); the service holds the most domains allowed (`domain_limit`); the service is not a web service (`service_not_routed`) or is being deleted',
        },
      },
      handler: async ({ params, body }) => {
        const { service, domain } = await addHostname(ctx, vpcScope(params), params.serviceID, body);
        return { status: 201, body: (await render(ctx, service, [domain]))[0]! };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${DOMAINS}/{domainID}/verify`,
      summary:
        "Re-check DNS and issue TLS: when the TXT and routing records check out, the domain becomes the hostname's one holder (other services' pending claims on it are removed), the hostname routes to the service and a certificate is obtained over ACME; the answer is `active`, `verified` (certificate on its way) or `failed` with `error`",
      tag: 'services',
      access: 'Admin',
      params: domainParams,
      responses: {
        200: { description: 'The domain as it now stands', schema: hostnameSchema },
        ...errors,
        404: { description: 'Service or domain not found; a claim that lapsed, or that another service won by verifying first, is gone (`domain_not_found`)' },
        409: { description: 'Another service verified the hostname first (`hostname_taken`); the service is being deleted' },
      },
      handler: async ({ params }) => {
        const { service, domain } = await verifyHostname(ctx, vpcScope(params), params.serviceID, params.domainID);
        return { status: 200, body: (await render(ctx, service, [domain]))[0]! };
      },
    }),
    defineRoute({
      method: 'delete',
      path: `${DOMAINS}/{domainID}`,
      summary: 'Detach a domain: the hostname stops routing and its certificate is removed from the edge',
      tag: 'services',
      access: 'Admin',
      params: domainParams,
      responses: { 204: { description: 'Detached' }, 403: errors[403], 404: errors[404], 503: errors[503] },
      handler: async ({ params }) => {
        await removeHostname(ctx, vpcScope(params), params.serviceID, params.domainID);
        return { status: 204 };
      },
    }),
  ];
}
