import { z } from 'zod';
import { defineRoute, pageQuery, vpcScope, errorResponses, FORBIDDEN_DESCRIPTION, type Route } from '@pier/kit';
import type { ComputeContext } from '../domain/context.ts';
import { listBackups, takeBackup } from '../domain/disk-backups/disk-backups.ts';
import { restoreBackup } from '../domain/disk-backups/disk-restore.ts';
import { deleteSchedule, putSchedule, RETENTION_COUNT } from '../domain/disk-backups/backup-schedule.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { serviceJson } from './shapes.ts';
import {
  diskBackupJson,
  diskBackupListSchema,
  diskBackupScheduleJson,
  diskBackupScheduleSchema,
  diskBackupSchema,
  diskRestoreJson,
  diskRestoreResultSchema,
} from './disk-backup-shapes.ts';

// Disk backups of a service with a persistent disk: the list for any member; taking one,
// restoring one and the schedule for Owner or Admin (the spec's table).

const BACKUPS = `${BASE}/{serviceID}/backups`;

const errors = errorResponses({
  400: 'Invalid input; `field` names the offending field',
  403: FORBIDDEN_DESCRIPTION,
  404: 'Service (or backup) not found',
  409: 'The service has no disk (`no_disk`), is not deployed yet (`not_deployed`), a backup or restore of it is running (`backup_in_progress`, `restore_in_progress`), the backup is not completed (`backup_not_completed`), or the service is being deleted',
  503: 'The cluster cannot be reached',
});

const retention = `Completed scheduled backups kept, ${RETENTION_COUNT.min}-${RETENTION_COUNT.max} (default ${RETENTION_COUNT.default}); older ones are deleted`;

export function diskBackupRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BACKUPS,
      summary: "List disk backups, newest first, with the service's latest restore and its schedule",
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of backups', schema: diskBackupListSchema },
        400: { description: 'Invalid `limit` or `cursor`; `field` names it' },
        404: errors[404],
      },
      handler: async ({ params, query }) => {
        const view = await listBackups(ctx, vpcScope(params), params.serviceID, query);
        return {
          status: 200,
          body: {
            items: view.page.items.map(diskBackupJson),
            next_cursor: view.page.nextCursor,
            restore: view.restore ? diskRestoreJson(view.restore) : null,
            schedule: view.schedule ? diskBackupScheduleJson(view.schedule) : null,
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: BACKUPS,
      summary: 'Take a disk backup now (asynchronous: `running`, then `completed` or `failed`)',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      responses: { 202: { description: 'The backup, `running`', schema: diskBackupSchema }, ...errors },
      handler: async ({ params }) => ({ status: 202, body: diskBackupJson(await takeBackup(ctx, vpcScope(params), params.serviceID)) }),
    }),
    defineRoute({
      method: 'post',
      path: `${BACKUPS}/restore`,
      summary: "Restore a disk backup: the service is scaled down (status `restoring`), its disk's contents replaced, and scaled up again",
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({ backup_id: z.string().min(1).max(100).describe('A completed backup of this service') }),
      responses: { 202: { description: 'The service (`restoring`) and the restore (`running`)', schema: diskRestoreResultSchema }, ...errors },
      handler: async ({ params, body }) => {
        const { service, restore } = await restoreBackup(ctx, vpcScope(params), params.serviceID, body.backup_id);
        return { status: 202, body: { service: serviceJson(service, ctx.edge), restore: diskRestoreJson(restore) } };
      },
    }),
    defineRoute({
      method: 'put',
      path: `${BACKUPS}/schedule`,
      summary: 'Set the backup schedule (replaces any): a cron schedule in UTC and how many scheduled backups are kept',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({
        schedule: z.string().min(1).max(200).describe('Five-field cron (minute hour day-of-month month day-of-week) or a macro such as @daily, UTC'),
        retention_count: z.int().min(RETENTION_COUNT.min).max(RETENTION_COUNT.max).optional().describe(retention),
      }),
      responses: { 200: { description: 'The schedule, with its next run', schema: diskBackupScheduleSchema }, ...errors },
      handler: async ({ params, body }) => ({ status: 200, body: diskBackupScheduleJson(await putSchedule(ctx, vpcScope(params), params.serviceID, body)) }),
    }),
    defineRoute({
      method: 'delete',
      path: `${BACKUPS}/schedule`,
      summary: 'Remove the backup schedule (the backups it took stay)',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      responses: { 204: { description: 'Removed' }, 403: errors[403], 404: { description: 'Service not found, or it has no schedule (`schedule_not_found`)' } },
      handler: async ({ params }) => {
        await deleteSchedule(ctx, vpcScope(params), params.serviceID);
        return { status: 204 };
      },
    }),
  ];
}
