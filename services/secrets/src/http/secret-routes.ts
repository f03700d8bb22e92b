import { z } from 'zod';
import { defineRoute, errorBodySchema, errorResponses, FORBIDDEN_DESCRIPTION, listBody, pageQuery, vpcPathParams, vpcScope, type Route } from '@pier/kit';
import type { SecretsContext } from '../domain/context.ts';
import { createSecret, takeUpCreate } from '../domain/create-secret.ts';
import { deleteSecret } from '../domain/delete-secret.ts';
import { getSecret, listSecrets } from '../domain/read-secrets.ts';
import { createSecretInput } from '../domain/secret-rules.ts';
import { secretJson, secretListSchema, secretSchema } from './shapes.ts';

const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets';
const TAG = 'secrets';

const secretParams = vpcPathParams.extend({ secretID: z.string() });

const errors = errorResponses(
  {
    403: FORBIDDEN_DESCRIPTION,
    404: 'secret not found (`secret_not_found`)',
    503: "the cluster's secret store cannot be reached (`cluster_unavailable`); nothing was written",
  },
  errorBodySchema,
);

export function secretRoutes(ctx: SecretsContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BASE,
      summary: 'List secrets in the VPC: id, name, key names and timestamps. Values are never returned.',
      tag: TAG,
      access: 'Member',
      params: vpcPathParams,
      query: pageQuery,
      responses: {
        200: { description: 'a page of secrets, without values', schema: secretListSchema },
        400: { description: 'bad limit or cursor', schema: errorBodySchema },
      },
      handler: async ({ params, query }) => {
        const page = await listSecrets(ctx, vpcScope(params), query);
        return { status: 200, body: listBody(page, secretJson) };
      },
    }),
    defineRoute({
      method: 'post',
      path: BASE,
      summary:
        "Create a secret. The values go to the cluster's secret store in the VPC's namespace, never to Pier's database; " +
        'the response, like every read, carries the key names only.',
      tag: TAG,
      access: 'Admin',
      params: vpcPathParams,
      body: createSecretInput,
      responses: {
        201: { description: 'created; values are not echoed', schema: secretSchema },
        400: { description: 'invalid name or values (the message names the problem)', schema: errorBodySchema },
        403: errors[403],
        409: { description: 'a secret with this name exists in the VPC (`already_exists`)', schema: errorBodySchema },
        503: errors[503],
      },
      handler: async ({ params, body, log }) => {
        const record = await createSecret(ctx, vpcScope(params), body);
        log.info({ secretId: record.id, keys: record.keys.length }, 'secret created');
        return { status: 201, body: secretJson(record) };
      },
      replay: async ({ params }, id) => {
        const record = await takeUpCreate(ctx, vpcScope(params), id);
        return record && { status: 201, body: secretJson(record) };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{secretID}`,
      summary: 'Secret detail: id, name, key names and timestamps. Values are never returned.',
      tag: TAG,
      access: 'Member',
      params: secretParams,
      responses: { 200: { description: 'the secret, without values', schema: secretSchema }, 404: errors[404] },
      handler: async ({ params }) => ({ status: 200, body: secretJson(await getSecret(ctx, vpcScope(params), params.secretID)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/{secretID}`,
      summary:
        "Delete a secret from Pier and from the cluster's secret store. Services referencing it are not changed; " +
        'their next rollout fails with a missing-secret error.',
      tag: TAG,
      access: 'Admin',
      params: secretParams,
      responses: { 204: { description: 'deleted' }, 403: errors[403], 404: errors[404], 503: errors[503] },
      handler: async ({ params, log }) => {
        await deleteSecret(ctx, vpcScope(params), params.secretID);
        log.info({ secretId: params.secretID }, 'secret deleted');
        return { status: 204 };
      },
    }),
  ];
}
