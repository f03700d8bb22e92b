import { z } from 'zod';
import { defineRoute, pageQuery, type Route } from '@pier/kit';
import type { SecretsContext } from '../domain/context.ts';
import { createSecret, takeUpCreate } from '../domain/create-secret.ts';
import { deleteSecret } from '../domain/delete-secret.ts';
import { getSecret, listSecrets } from '../domain/read-secrets.ts';
import { createSecretInput } from '../domain/secret-rules.ts';
import { errorSchema, secretJson, secretListSchema, secretSchema } from './shapes.ts';

const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets';
const TAG = 'secrets';

const scopeParams = z.object({ workspaceID: z.string(), vpcID: z.string() });
const secretParams = scopeParams.extend({ secretID: z.string() });

const scopeOf = (p: { workspaceID: string; vpcID: string }) => ({ workspaceId: p.workspaceID, vpcId: p.vpcID });

const denied = { description: 'insufficient workspace permissions', schema: errorSchema };
const notFound = { description: 'secret not found (`secret_not_found`)', schema: errorSchema };
const unavailable = {
  description: "the cluster's secret store cannot be reached (`cluster_unavailable`); nothing was written",
  schema: errorSchema,
};

export function secretRoutes(ctx: SecretsContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BASE,
      summary: 'List secrets in the VPC: id, name, key names and timestamps. Values are never returned.',
      tag: TAG,
      access: 'Member',
      params: scopeParams,
      query: pageQuery,
      responses: {
        200: { description: 'a page of secrets, without values', schema: secretListSchema },
        400: { description: 'bad limit or cursor', schema: errorSchema },
      },
      handler: async ({ params, query }) => {
        const page = await listSecrets(ctx, scopeOf(params), query);
        return { status: 200, body: { items: page.items.map(secretJson), next_cursor: page.nextCursor } };
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
      params: scopeParams,
      body: createSecretInput,
      responses: {
        201: { description: 'created; values are not echoed', schema: secretSchema },
        400: { description: 'invalid name or values (the message names the problem)', schema: errorSchema },
        403: denied,
        409: { description: 'a secret with this name exists in the VPC (`already_exists`)', schema: errorSchema },
        503: unavailable,
      },
      handler: async ({ params, body, log }) => {
        const record = await createSecret(ctx, scopeOf(params), body);
        log.info({ secretId: record.id, keys: record.keys.length }, 'secret created');
        return { status: 201, body: secretJson(record) };
      },
      replay: async ({ params }, id) => {
        const record = await takeUpCreate(ctx, scopeOf(params), id);
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
      responses: { 200: { description: 'the secret, without values', schema: secretSchema }, 404: notFound },
      handler: async ({ params }) => ({ status: 200, body: secretJson(await getSecret(ctx, scopeOf(params), params.secretID)) }),
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
      responses: { 204: { description: 'deleted' }, 403: denied, 404: notFound, 503: unavailable },
      handler: async ({ params, log }) => {
        await deleteSecret(ctx, scopeOf(params), params.secretID);
        log.info({ secretId: params.secretID }, 'secret deleted');
        return { status: 204 };
      },
    }),
  ];
}
