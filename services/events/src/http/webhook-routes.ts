import { z } from 'zod';
import { defineRoute, errorBodySchema, FORBIDDEN_DESCRIPTION, listBody, pageQuery, type Route } from '@pier/kit';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  redeliver,
  rotateSecret,
  testWebhook,
  updateWebhook,
  type WebhooksContext,
} from '../domain/webhooks.ts';
import { createWebhookInput, updateWebhookInput } from '../domain/webhook-rules.ts';
import { deliveryJson, deliveryListSchema, deliverySchema, webhookJson, webhookListSchema, webhookSchema, webhookWithSecretSchema } from './webhook-shapes.ts';

const BASE = '/api/v1/workspaces/{workspaceID}/webhooks';
const TAG = 'webhooks';
const wsParams = z.object({ workspaceID: z.string() });
const hookParams = wsParams.extend({ webhookID: z.string() });
const deliveryParams = hookParams.extend({ deliveryID: z.string() });

const e = (description: string) => ({ description, schema: errorBodySchema });
const forbidden = e(FORBIDDEN_DESCRIPTION);
const notFound = e('webhook not found (`webhook_not_found`)');
const badUrl = e(
  'bad input, or a URL the guard refuses (`url_not_allowed`: not https, credentials, a private, loopback or link-local address); the message names the field',
);

export function webhookRoutes(ctx: WebhooksContext): Route[] {
  return [
    defineRoute({
      method: 'post',
      path: BASE,
      summary: 'Add a webhook endpoint: matching events are POSTed to it, signed the Standard Webhooks way. The answer carries the signing `secret`, once.',
      tag: TAG,
      access: 'Admin',
      params: wsParams,
      body: createWebhookInput,
      responses: { 201: { description: 'the endpoint, with its secret', schema: webhookWithSecretSchema }, 400: badUrl, 403: forbidden },
      handler: async ({ params, body }) => {
        const { webhook, secret } = await createWebhook(ctx, params.workspaceID, body);
        return { status: 201, body: { ...webhookJson(webhook), secret } };
      },
      shownOnce: ['secret'],
    }),
    defineRoute({
      method: 'get',
      path: BASE,
      summary: "The workspace's webhook endpoints (never their secrets)",
      tag: TAG,
      access: 'Admin',
      params: wsParams,
      query: pageQuery,
      responses: { 200: { description: 'a page of endpoints', schema: webhookListSchema }, 400: e('bad limit or cursor'), 403: forbidden },
      handler: async ({ params, query }) => ({ status: 200, body: listBody(await listWebhooks(ctx, params.workspaceID, query), webhookJson) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{webhookID}`,
      summary: 'A webhook endpoint (never its secret)',
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      responses: { 200: { description: 'the endpoint', schema: webhookSchema }, 403: forbidden, 404: notFound },
      handler: async ({ params }) => ({ status: 200, body: webhookJson(await getWebhook(ctx, params.workspaceID, params.webhookID)) }),
    }),
    defineRoute({
      method: 'patch',
      path: `${BASE}/{webhookID}`,
      summary: 'Change an endpoint: url, events, description, enabled (true also re-enables one the platform disabled)',
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      body: updateWebhookInput,
      responses: { 200: { description: 'the endpoint', schema: webhookSchema }, 400: badUrl, 403: forbidden, 404: notFound },
      handler: async ({ params, body }) => ({ status: 200, body: webhookJson(await updateWebhook(ctx, params.workspaceID, params.webhookID, body)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/{webhookID}`,
      summary: 'Remove an endpoint, with its deliveries',
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      responses: { 204: { description: 'removed' }, 403: forbidden, 404: notFound },
      handler: async ({ params }) => {
        await deleteWebhook(ctx, params.workspaceID, params.webhookID);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{webhookID}/rotate-secret`,
      summary: 'A new signing secret, shown once; the old one keeps signing beside it (a second signature) for 24 hours',
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      responses: { 200: { description: 'the endpoint, with its new secret', schema: webhookWithSecretSchema }, 403: forbidden, 404: notFound },
      handler: async ({ params }) => {
        const { webhook, secret } = await rotateSecret(ctx, params.workspaceID, params.webhookID);
        return { status: 200, body: { ...webhookJson(webhook), secret } };
      },
      shownOnce: ['secret'],
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{webhookID}/test`,
      summary: 'Send a `webhook.test` event to the endpoint now; its delivery is answered (follow it in …/deliveries)',
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      responses: { 202: { description: 'the delivery, queued', schema: deliverySchema }, 403: forbidden, 404: notFound },
      handler: async ({ params }) => ({ status: 202, body: deliveryJson(await testWebhook(ctx, params.workspaceID, params.webhookID)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{webhookID}/deliveries`,
      summary: "The endpoint's deliveries, newest first, each with every attempt: time, status code, latency, the answer's first bytes, error",
      tag: TAG,
      access: 'Admin',
      params: hookParams,
      query: pageQuery,
      responses: { 200: { description: 'a page of deliveries', schema: deliveryListSchema }, 400: e('bad limit or cursor'), 403: forbidden, 404: notFound },
      handler: async ({ params, query }) => ({
        status: 200,
        body: listBody(await listDeliveries(ctx, params.workspaceID, params.webhookID, query), deliveryJson),
      }),
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/{webhookID}/deliveries/{deliveryID}/redeliver`,
      summary: 'Send a delivery again now, with the same `webhook-id`, from the start of the retry schedule',
      tag: TAG,
      access: 'Admin',
      params: deliveryParams,
      responses: {
        202: { description: 'the delivery, queued', schema: deliverySchema },
        403: forbidden,
        404: e('webhook or delivery not found (`webhook_not_found`, `delivery_not_found`)'),
      },
      handler: async ({ params }) => ({ status: 202, body: deliveryJson(await redeliver(ctx, params.workspaceID, params.webhookID, params.deliveryID)) }),
    }),
  ];
}
