// pier services backups: disk backups of a service with a persistent disk — list, create,
// restore, and the schedule (set, delete). Registered under `pier services` (services.ts).
import type { Command } from 'commander';
import { paginate, unwrap, type PierClient } from '@pier/sdk';
import { examples, group, integer, run, WAIT_TIMEOUT } from '../command.ts';
import type { Scope } from '../context.ts';
import { CliError } from '../errors.ts';
import { collectAll, confirm, service, SERVICE, waitForRollout } from '../resources.ts';
import { waitFor } from '../wait.ts';
import { backupColumns, byteSize } from './backups.ts';

const BACKUPS = `${SERVICE}/backups` as const;

type ServicePath = Scope & { serviceID: string };

interface WaitOptions {
  wait?: boolean;
  timeout: number;
}

/** The first page, with the latest restore and the schedule. */
const firstPage = (client: PierClient, path: ServicePath) => unwrap(client.GET(BACKUPS, { params: { path } }));

const allBackups = (client: PierClient, path: ServicePath) =>
  collectAll(paginate((cursor) => unwrap(client.GET(BACKUPS, { params: { path, query: { cursor } } }))));

function waitForBackup(client: PierClient, path: ServicePath, id: string, timeoutSeconds: number) {
  return waitFor({
    what: `backup ${id.slice(0, 8)}`,
    read: async () => {
      const found = (await allBackups(client, path)).find((b) => b.id === id);
      if (!found) throw new CliError(`backup ${id} is gone`, 'backup_not_found');
      return found;
    },
    status: (b) => b.status,
    done: ['completed'],
    failed: ['failed'],
    reason: (b) => b.error,
    timeoutSeconds,
  });
}

function waitForRestore(client: PierClient, path: ServicePath, id: string, timeoutSeconds: number) {
  return waitFor({
    what: `restore ${id.slice(0, 8)}`,
    read: async () => {
      const restore = (await firstPage(client, path)).restore;
      if (restore?.id !== id) throw new CliError(`restore ${id} is not the service's latest`, 'restore_not_found');
      return restore;
    },
    status: (r) => r.status,
    done: ['completed'],
    failed: ['failed'],
    reason: (r) => r.error,
    timeoutSeconds,
  });
}

export function register(services: Command): void {
  const backups = group(services, 'backups', 'Disk backups of a service with a persistent disk: list, create, restore, schedule');

  examples(
    backups
      .command('list <service>')
      .description('Backups, newest first, with the schedule and how the last restore went')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          const first = await firstPage(client, path);
          const items = first.next_cursor ? await allBackups(client, path) : first.items;
          ctx.out.result({ ...first, items, next_cursor: null }, () => {
            ctx.out.table(items, backupColumns({ header: 'ID', value: (b) => b.id }, { header: 'CREATED', value: (b) => b.created_at }), 'no backups yet');
            const s = first.schedule;
            ctx.out.line(s ? `Schedule: ${s.schedule} (UTC), keeps ${s.retention_count}; next run ${s.next_run_at}` : 'Schedule: none');
            const r = first.restore;
            if (r) ctx.out.line(`Last restore: backup ${r.backup_id}, ${r.status}${r.error ? ` (${r.error})` : ''}, ${r.finished_at ?? r.created_at}`);
          });
        }),
      ),
    'pier services backups list files',
  );

  examples(
    backups
      .command('create <service>')
      .description("Back the service's disk up now (its replicas are paused for the copy on docker)")
      .option('--wait', 'wait until it has completed (failed: exit 1)')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: WaitOptions) => {
          const { client, path } = await service(ctx, ref);
          const started = await unwrap(client.POST(BACKUPS, { params: { path } }));
          const landed = o.wait ? await waitForBackup(client, path, started.id, o.timeout) : started;
          ctx.out.result(landed, () => ctx.out.line(`Backup ${landed.id}: ${landed.status}${landed.size_bytes ? ` (${byteSize(landed.size_bytes)})` : ''}`));
        }),
      ),
    'pier services backups create files --wait',
  );

  examples(
    backups
      .command('restore <service> <backup>')
      .description("Replace the disk's contents with a backup's: the service is stopped meanwhile, then started again")
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .option('--wait', 'wait until the restore is through and the service runs again (a failed restore: exit 1)')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, backup: string, o: WaitOptions & { yes?: boolean }) => {
          const { client, path } = await service(ctx, ref);
          await confirm(`replace the disk of ${ref} with backup ${backup}`, ref, o.yes);
          const started = await unwrap(client.POST(`${BACKUPS}/restore`, { params: { path }, body: { backup_id: backup } }));
          if (!o.wait) {
            ctx.out.result(started, () => ctx.out.line(`Restoring backup ${backup} onto ${ref}: the service is ${started.service.status}`));
            return;
          }
          const restore = await waitForRestore(client, path, started.restore.id, o.timeout);
          const landed = await waitForRollout(client, path, ref, o.timeout);
          ctx.out.result({ service: landed, restore }, () => ctx.out.line(`Restored backup ${backup} onto ${ref}: the service is ${landed.status}`));
        }),
      ),
    'pier services backups restore files 0b6f4f52-0c1e-4a8e-9d55-1f6f3d7d8a10 --yes --wait',
  );

  const schedule = group(backups, 'schedule', 'When the disk is backed up by itself (UTC) and how many of those backups are kept');

  examples(
    schedule
      .command('set <service>')
      .description('Set the schedule (replaces any)')
      .requiredOption('--cron <schedule>', 'five-field cron or a macro such as @daily, UTC ("0 3 * * *")')
      .option('--retention <count>', 'scheduled backups kept, 1-100 (default 7)', integer)
      .action(
        run(async (ctx, ref: string, o: { cron: string; retention?: number }) => {
          const { client, path } = await service(ctx, ref);
          const body = { schedule: o.cron, ...(o.retention === undefined ? {} : { retention_count: o.retention }) };
          const s = await unwrap(client.PUT(`${BACKUPS}/schedule`, { params: { path }, body }));
          ctx.out.result(s, () =>
            ctx.out.fields([
              ['schedule', `${s.schedule} (UTC)`],
              ['keeps', `${s.retention_count} scheduled backups`],
              ['next run', s.next_run_at],
            ]),
          );
        }),
      ),
    'pier services backups schedule set files --cron "30 2 * * *" --retention 14',
  );

  examples(
    schedule
      .command('delete <service>')
      .description('Remove the schedule (the backups it took stay)')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          await unwrap(client.DELETE(`${BACKUPS}/schedule`, { params: { path } }));
          ctx.out.result({ deleted: 'schedule' }, () => ctx.out.line(`Backup schedule of ${ref} removed.`));
        }),
      ),
    'pier services backups schedule delete files',
  );
}
