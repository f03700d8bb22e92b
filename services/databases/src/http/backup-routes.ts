import { defineRoute, pageQuery, errorBodySchema, vpcScope, type Route } from '@pier/kit';
import type { DatabasesContext } from '../domain/context.ts';
import { deleteBackup, listBackups, takeBackup } from '../domain/backups.ts';
import { updateSchedule } from '../domain/backup-schedule.ts';
import { forkDatabase, restoreDatabase } from '../domain/restore.ts';
import { backupJson, databaseJson, scheduleJson, windowJson } from './shapes.ts';
import * as s from './schemas.ts';
import { ONE, TAG, errors } from './route-parts.ts';

// Backups, their schedule, and the two ways to a new database from a backup: restore and
// fork. Listing is for any member; everything else for Owner or Admin (the spec's table).

const busy = { 409: { description: 'a backup is pending or running, a name is taken, or a backup is needed', schema: errorBodySchema } };

export function backupRoutes(ctx: DatabasesContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: `${ONE}/backups`,
      summary: "List backups (resynced from the backup repository), newest first, with postgresql's recovery window",
      tag: TAG,
      access: 'Member',
      params: s.databaseParams,
      query: pageQuery,
      responses: { 200: { description: 'backups', schema: s.backupList }, ...errors },
      handler: async ({ params, query }) => {
        const view = await listBackups(ctx, vpcScope(params), params.databaseID, query);
        return {
          status: 200,
          body: { items: view.page.items.map(backupJson), next_cursor: view.page.nextCursor, recovery_window: windowJson(view.window) },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/backups`,
      summary: 'Take a backup now (asynchronous: status running)',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.takeBackupBody,
      responses: { 202: { description: 'accepted; the backup runs', schema: s.backup }, ...busy, ...errors },
      handler: async ({ params }) => ({ status: 202, body: backupJson(await takeBackup(ctx, vpcScope(params), params.databaseID)) }),
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/backups/restore`,
      summary: 'Restore a backup (postgresql: or a point in time) into a new database',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.restoreBody,
      responses: { 202: { description: 'accepted; the new database is creating', schema: s.database }, ...busy, ...errors },
      handler: async ({ params, body }) => ({ status: 202, body: databaseJson(await restoreDatabase(ctx, vpcScope(params), params.databaseID, body)) }),
    }),
    defineRoute({
      method: 'patch',
      path: `${ONE}/backups/schedule`,
      summary: 'Configure the backup schedule (all fields optional; the answer is the whole schedule)',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.scheduleBody,
      responses: { 200: { description: 'the schedule', schema: s.schedule }, ...errors },
      handler: async ({ params, body }) => ({ status: 200, body: scheduleJson(await updateSchedule(ctx, vpcScope(params), params.databaseID, body)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${ONE}/backups/{backupName}`,
      summary: 'Delete a backup',
      tag: TAG,
      access: 'Admin',
      params: s.backupParams,
      responses: { 204: { description: 'deleted' }, ...busy, ...errors },
      handler: async ({ params }) => {
        await deleteBackup(ctx, vpcScope(params), params.databaseID, params.backupName);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/fork`,
      summary: 'Fork into a new database from the latest backup, in this VPC or another of the workspace',
      tag: TAG,
      access: 'Admin',
      params: s.databaseParams,
      body: s.forkBody,
      responses: { 202: { description: 'accepted; the fork is creating', schema: s.database }, ...busy, ...errors },
      handler: async ({ params, body, identityToken }) => ({
        status: 202,
        body: databaseJson(await forkDatabase(ctx, vpcScope(params), params.databaseID, body, identityToken)),
      }),
    }),
  ];
}
