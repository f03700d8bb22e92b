import { NotFoundError, defineRoute, pageQuery, listBody, errorBodySchema, vpcScope, vpcPathParams, type Route } from '@pier/kit';
import type { DatabasesContext } from '../domain/context.ts';
import { getDatabase, listDatabases } from '../domain/status-refresh.ts';
import { provisionDatabase } from '../domain/provision.ts';
import { updateDatabase } from '../domain/update.ts';
import { deleteDatabase } from '../domain/delete.ts';
import { connectionOf } from '../domain/connection.ts';
import { addRule, listRules, removeRule } from '../domain/allowlist.ts';
import { inspectSchema, resetSlowQueries, runQuery, slowQueries } from '../domain/console.ts';
import { connectionJson, databaseJson, ruleJson } from './shapes.ts';
import { setReplicas } from '../domain/replicas.ts';
import * as s from './schemas.ts';
import { BASE, ONE, TAG, errors } from './route-parts.ts';

// Thin routes: parse (zod, in createServiceApp), call one use case, shape the JSON.
// Roles as the spec's table says: connection and slow-queries for any member,
// schema and query for Owner or Admin. Backups, restore and fork: backup-routes.ts.

export function databaseRoutes(ctx: DatabasesContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BASE,
      summary: 'List databases in the VPC (live status)',
      tag: TAG,
      access: 'Member',
      params: vpcPathParams,
      query: pageQuery,
      responses: { 200: { description: 'databases', schema: s.databaseList }, ...errors },
      handler: async ({ params, query }) => {
        const page = await listDatabases(ctx, vpcScope(params), query);
        return { status: 200, body: listBody(page, databaseJson) };
      },
    }),
    defineRoute({
      method: 'post',
      path: BASE,
      summary: 'Provision a database (asynchronous: status creating)',
      tag: TAG,
      access: 'Admin',
      params: vpcPathParams,
      body: s.provisionBody,
      responses: { 202: { description: 'accepted; provisioning', schema: s.database }, 409: { description: 'name taken', schema: errorBodySchema }, ...errors },
      handler: async ({ params, body }) => ({ status: 202, body: databaseJson(await provisionDatabase(ctx, vpcScope(params), body)) }),
      // A dead attempt's unfinished database was undone by the reconciler's first pass.
      replay: async ({ params }, id) => {
        const made = await getDatabase(ctx, vpcScope(params), id).catch((err: unknown) => {
          if (err instanceof NotFoundError) return undefined;
          throw err;
        });
        return made && { status: 202, body: databaseJson(made) };
      },
    }),
    defineRoute({
      method: 'get',
      path: ONE,
      summary: 'Database detail with live status',
      tag: TAG,
      access: 'Member',
      params: s.databaseParams,
      responses: { 200: { description: 'database', schema: s.database }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: databaseJson(await getDatabase(ctx, vpcScope(params), params.databaseID)) }),
    }),
    defineRoute({
      method: 'patch',
      path: ONE,
      summary: 'Rename, resize (storage grows only), toggle external access',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.updateBody,
      responses: {
        200: { description: 'database', schema: s.database },
        409: { description: 'name taken or database busy', schema: errorBodySchema },
        ...errors,
      },
      handler: async ({ params, body }) => ({ status: 200, body: databaseJson(await updateDatabase(ctx, vpcScope(params), params.databaseID, body)) }),
    }),
    defineRoute({
      method: 'delete',
      path: ONE,
      summary: 'Delete the database (asynchronous: status deleting)',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      responses: { 202: { description: 'accepted; tearing down', schema: s.database }, ...errors },
      handler: async ({ params }) => ({ status: 202, body: databaseJson(await deleteDatabase(ctx, vpcScope(params), params.databaseID)) }),
    }),
    defineRoute({
      method: 'patch',
      path: `${ONE}/replicas`,
      summary: 'Change the read replica count (postgresql: 0 to the maximum; mysql: instances, odd)',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.replicasBody,
      responses: {
        202: { description: 'accepted; replicas starting or stopping', schema: s.database },
        409: { description: 'database busy', schema: errorBodySchema },
        ...errors,
      },
      handler: async ({ params, body }) => ({ status: 202, body: databaseJson(await setReplicas(ctx, vpcScope(params), params.databaseID, body.replicas)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${ONE}/connection`,
      summary: 'Connection details and live credentials',
      tag: TAG,
      access: 'Member',
      params: s.databaseParams,
      responses: {
        200: { description: 'connection', schema: s.connection },
        409: { description: 'database being deleted', schema: errorBodySchema },
        ...errors,
      },
      handler: async ({ params }) => ({ status: 200, body: connectionJson(await connectionOf(ctx, vpcScope(params), params.databaseID)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${ONE}/ip-allowlist`,
      summary: 'List IP allowlist rules',
      tag: TAG,
      access: 'Member',
      params: s.databaseParams,
      query: pageQuery,
      responses: { 200: { description: 'rules', schema: s.ruleList }, ...errors },
      handler: async ({ params, query }) => {
        const page = await listRules(ctx, vpcScope(params), params.databaseID, query);
        return { status: 200, body: listBody(page, ruleJson) };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/ip-allowlist`,
      summary: 'Add an IP allowlist rule',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.ruleBody,
      responses: { 201: { description: 'rule', schema: s.rule }, 409: { description: 'duplicate rule', schema: errorBodySchema }, ...errors },
      handler: async ({ params, body }) => ({
        status: 201,
        body: ruleJson(await addRule(ctx, vpcScope(params), params.databaseID, body.cidr, body.description ?? '')),
      }),
    }),
    defineRoute({
      method: 'delete',
      path: `${ONE}/ip-allowlist/{ruleID}`,
      summary: 'Remove an IP allowlist rule',
      tag: TAG,
      access: 'Admin',
      params: s.ruleParams,
      responses: { 204: { description: 'removed' }, ...errors },
      handler: async ({ params }) => {
        await removeRule(ctx, vpcScope(params), params.databaseID, params.ruleID);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${ONE}/schema`,
      summary: 'Tables, columns, primary keys and indexes',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      responses: { 200: { description: 'schema', schema: s.schemaResult }, 409: { description: 'not running', schema: errorBodySchema }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: { tables: await inspectSchema(ctx, vpcScope(params), params.databaseID) } }),
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/query`,
      summary: 'Run one SQL statement (timeout and row cap apply)',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.queryBody,
      responses: { 200: { description: 'result', schema: s.queryResult }, 409: { description: 'not running', schema: errorBodySchema }, ...errors },
      handler: async ({ params, body }) => ({ status: 200, body: await runQuery(ctx, vpcScope(params), params.databaseID, body.sql) }),
    }),
    defineRoute({
      method: 'get',
      path: `${ONE}/slow-queries`,
      summary: 'Slowest statements by mean time',
      tag: TAG,
      access: 'Member',
      params: s.databaseParams,
      query: s.slowQueriesQuery,
      responses: { 200: { description: 'statements', schema: s.slowQueries }, 409: { description: 'not running', schema: errorBodySchema }, ...errors },
      handler: async ({ params, query }) => ({ status: 200, body: { items: await slowQueries(ctx, vpcScope(params), params.databaseID, query.limit) } }),
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/slow-queries/reset`,
      summary: 'Clear slow-query statistics',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      responses: { 204: { description: 'cleared' }, 409: { description: 'not running', schema: errorBodySchema }, ...errors },
      handler: async ({ params }) => {
        await resetSlowQueries(ctx, vpcScope(params), params.databaseID);
        return { status: 204 };
      },
    }),
  ];
}
