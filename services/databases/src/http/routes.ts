import { defineRoute, type Route } from '@pier/kit';
import { toJson, ruleToJson } from '../domain/database.ts';
import type { Databases } from '../operations/databases.ts';
import * as s from './schemas.ts';

// Thin routes: parse (zod, in createServiceApp), call one use case, shape the JSON.
// Roles as the spec's table says: connection and slow-queries for any member,
// schema and query for Owner or Admin.

const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases';
const ONE = `${BASE}/{databaseID}`;
const TAG = 'databases';

const errors = {
  400: { description: 'invalid request', schema: s.errorBody },
  403: { description: 'insufficient workspace permissions', schema: s.errorBody },
  404: { description: 'database not found', schema: s.errorBody },
  503: { description: 'cluster unreachable', schema: s.errorBody },
};

export function databaseRoutes(dbs: Databases): Route[] {
  return [
    defineRoute({
      method: 'get', path: BASE, summary: 'List databases in the VPC (live status)', tag: TAG, access: 'Member',
      params: s.vpcParams, query: s.pageQuery,
      responses: { 200: { description: 'databases', schema: s.databaseList }, ...errors },
      handler: async ({ params, query }) => {
        const page = await dbs.list(params.vpcID, query);
        return { status: 200, body: { items: page.items.map(toJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'post', path: BASE, summary: 'Provision a database (asynchronous: status creating)', tag: TAG, access: 'Admin',
      params: s.vpcParams, body: s.provisionBody,
      responses: { 202: { description: 'accepted; provisioning', schema: s.database }, 409: { description: 'name taken', schema: s.errorBody }, ...errors },
      handler: async ({ params, body }) => ({ status: 202, body: toJson(await dbs.provision(params.workspaceID, params.vpcID, body)) }),
    }),
    defineRoute({
      method: 'get', path: ONE, summary: 'Database detail with live status', tag: TAG, access: 'Member',
      params: s.databaseParams,
      responses: { 200: { description: 'database', schema: s.database }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: toJson(await dbs.get(params.vpcID, params.databaseID)) }),
    }),
    defineRoute({
      method: 'patch', path: ONE, summary: 'Rename, resize (storage grows only), toggle external access', tag: TAG, access: 'Admin',
      params: s.databaseParams, body: s.updateBody,
      responses: { 200: { description: 'database', schema: s.database }, 409: { description: 'name taken or database busy', schema: s.errorBody }, ...errors },
      handler: async ({ params, body }) => ({ status: 200, body: toJson(await dbs.update(params.vpcID, params.databaseID, body)) }),
    }),
    defineRoute({
      method: 'delete', path: ONE, summary: 'Delete the database (asynchronous: status deleting)', tag: TAG, access: 'Admin',
      params: s.databaseParams,
      responses: { 202: { description: 'accepted; tearing down', schema: s.database }, ...errors },
      handler: async ({ params }) => ({ status: 202, body: toJson(await dbs.remove(params.vpcID, params.databaseID)) }),
    }),
    defineRoute({
      method: 'get', path: `${ONE}/connection`, summary: 'Connection details and live credentials', tag: TAG, access: 'Member',
      params: s.databaseParams,
      responses: { 200: { description: 'connection', schema: s.connection }, 409: { description: 'database being deleted', schema: s.errorBody }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: await dbs.connection(params.vpcID, params.databaseID) }),
    }),
    defineRoute({
      method: 'get', path: `${ONE}/ip-allowlist`, summary: 'List IP allowlist rules', tag: TAG, access: 'Member',
      params: s.databaseParams,
      responses: { 200: { description: 'rules', schema: s.ruleList }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: { items: (await dbs.rules(params.vpcID, params.databaseID)).map(ruleToJson), next_cursor: null } }),
    }),
    defineRoute({
      method: 'post', path: `${ONE}/ip-allowlist`, summary: 'Add an IP allowlist rule', tag: TAG, access: 'Admin',
      params: s.databaseParams, body: s.ruleBody,
      responses: { 201: { description: 'rule', schema: s.rule }, 409: { description: 'duplicate rule', schema: s.errorBody }, ...errors },
      handler: async ({ params, body }) => ({
        status: 201,
        body: ruleToJson(await dbs.addRule(params.vpcID, params.databaseID, body.cidr, body.description ?? '')),
      }),
    }),
    defineRoute({
      method: 'delete', path: `${ONE}/ip-allowlist/{ruleID}`, summary: 'Remove an IP allowlist rule', tag: TAG, access: 'Admin',
      params: s.ruleParams,
      responses: { 204: { description: 'removed' }, ...errors },
      handler: async ({ params }) => {
        await dbs.removeRule(params.vpcID, params.databaseID, params.ruleID);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'get', path: `${ONE}/schema`, summary: 'Tables, columns, primary keys and indexes', tag: TAG, access: 'Admin',
      params: s.databaseParams,
      responses: { 200: { description: 'schema', schema: s.schemaResult }, 409: { description: 'not running', schema: s.errorBody }, ...errors },
      handler: async ({ params }) => ({ status: 200, body: { tables: await dbs.schema(params.vpcID, params.databaseID) } }),
    }),
    defineRoute({
      method: 'post', path: `${ONE}/query`, summary: 'Run one SQL statement (timeout and row cap apply)', tag: TAG, access: 'Admin',
      params: s.databaseParams, body: s.queryBody,
      responses: { 200: { description: 'result', schema: s.queryResult }, 409: { description: 'not running', schema: s.errorBody }, ...errors },
      handler: async ({ params, body }) => ({ status: 200, body: await dbs.query(params.vpcID, params.databaseID, body.sql) }),
    }),
    defineRoute({
      method: 'get', path: `${ONE}/slow-queries`, summary: 'Slowest statements by mean time', tag: TAG, access: 'Member',
      params: s.databaseParams, query: s.slowQueriesQuery,
      responses: { 200: { description: 'statements', schema: s.slowQueries }, 409: { description: 'not running', schema: s.errorBody }, ...errors },
      handler: async ({ params, query }) => ({ status: 200, body: { items: await dbs.slowQueries(params.vpcID, params.databaseID, query.limit) } }),
    }),
    defineRoute({
      method: 'post', path: `${ONE}/slow-queries/reset`, summary: 'Clear slow-query statistics', tag: TAG, access: 'Admin',
      params: s.databaseParams,
      responses: { 204: { description: 'cleared' }, 409: { description: 'not running', schema: s.errorBody }, ...errors },
      handler: async ({ params }) => {
        await dbs.resetSlowQueries(params.vpcID, params.databaseID);
        return { status: 204 };
      },
    }),
  ];
}
