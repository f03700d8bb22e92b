// pier db backups, restore, fork, replicas: a database's backups and schedule, and the new
// databases made from them. Registered under `pier db` (databases.ts).
import type { Command } from 'commander';
import { paginate, PierApiError, unwrap, type PierClient } from '@pier/sdk';
import { examples, integer, run, WAIT_TIMEOUT } from '../command.ts';
import { byNameOrId, type Context, type Scope } from '../context.ts';
import { CliError } from '../errors.ts';
import { collectAll, confirm, database, DATABASE } from '../resources.ts';
import { waitFor } from '../wait.ts';
import type { Column } from '../output.ts';

const BACKUPS = `${DATABASE}/backups` as const;
const VPCS = '/api/v1/workspaces/{workspaceID}/vpcs' as const;

interface WaitOptions {
  wait?: boolean;
  timeout: number;
}

interface BackupRow {
  status: string;
  error: string | null;
  method: string;
  size_bytes: number | null;
  completed_at: string | null;
}

/** The columns of a table of backups (a database's or a disk's), after `first` (the name or id); `started` is when it began. */
export function backupColumns<T extends BackupRow>(first: Column<T>, started: Column<T>): Column<T>[] {
  return [
    first,
    { header: 'STATUS', value: (b) => (b.error ? `${b.status} (${b.error})` : b.status) },
    { header: 'METHOD', value: (b) => b.method },
    { header: 'SIZE', value: (b) => byteSize(b.size_bytes) },
    started,
    { header: 'COMPLETED', value: (b) => b.completed_at ?? '' },
  ];
}

/** A size for people (KiB under a MiB). */
export const byteSize = (bytes: number | null) =>
  bytes === null ? '' : bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** Waits for a backup to finish (failed: exit 1). */
function waitForBackup(client: PierClient, path: Scope & { databaseID: string }, name: string, timeoutSeconds: number) {
  return waitFor({
    what: `backup ${name}`,
    read: async () => {
      const list = await collectAll(paginate((cursor) => unwrap(client.GET(BACKUPS, { params: { path, query: { cursor } } }))));
      const found = list.find((b) => b.name === name);
      if (!found) throw new CliError(`backup ${name} is gone`, 'backup_not_found');
      return found;
    },
    status: (b) => b.status,
    done: ['completed'],
    failed: ['failed'],
    reason: (b) => b.error,
    timeoutSeconds,
  });
}

/**
 * Sends a restore or fork; with --wait, a 409 backup_pending (the source had no finished
 * backup, so one was started) is retried until that backup has completed, and then the new
 * database is waited for until it runs.
 */
async function createFromBackup<T extends { id: string; name: string; status: string; status_reason: string | null }>(
  ctx: Context,
  send: () => Promise<T>,
  o: WaitOptions,
  reread: (id: string) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    try {
      const created = await send();
      if (!o.wait) return created;
      const left = o.timeout - Math.round((Date.now() - started) / 1000);
      return await waitFor({
        what: `database ${created.name}`,
        read: () => reread(created.id),
        status: (d) => d.status,
        done: ['running'],
        failed: ['error'],
        reason: (d) => d.status_reason,
        timeoutSeconds: Math.max(left, 1),
      });
    } catch (err) {
      const pending = err instanceof PierApiError && err.code === 'backup_pending';
      if (!pending || !o.wait || Date.now() - started > o.timeout * 1000) throw err;
      ctx.out.note(`${err.message.replace(/; retry shortly.*$/, '')}: waiting`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

export function register(db: Command): void {
  const backups = db.command('backups').description("A database's backups and their schedule");
  backups.action(() => backups.help());

  examples(
    backups
      .command('list <database>')
      .description('Backups, newest first, and the span a point-in-time restore may take (postgresql)')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await database(ctx, ref);
          const first = await unwrap(client.GET(BACKUPS, { params: { path } }));
          const items = first.next_cursor
            ? await collectAll(paginate((cursor) => unwrap(client.GET(BACKUPS, { params: { path, query: { cursor } } }))))
            : first.items;
          const all = { ...first, items, next_cursor: null };
          ctx.out.result(all, () => {
            ctx.out.table(items, backupColumns({ header: 'NAME', value: (b) => b.name }, { header: 'STARTED', value: (b) => b.started_at }), 'no backups yet');
            const w = first.recovery_window;
            if (w) ctx.out.line(`Point-in-time recovery: any time from ${w.earliest} to ${w.latest}`);
          });
        }),
      ),
    'pier db backups list orders',
  );

  examples(
    backups
      .command('create <database>')
      .description('Take a backup now')
      .option('--wait', 'wait until it has completed (failed: exit 1)')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: WaitOptions) => {
          const { client, path } = await database(ctx, ref);
          const started = await unwrap(client.POST(BACKUPS, { params: { path }, body: {} }));
          const landed = o.wait ? await waitForBackup(client, path, started.name, o.timeout) : started;
          ctx.out.result(landed, () => ctx.out.line(`Backup ${landed.name}: ${landed.status}${landed.size_bytes ? ` (${byteSize(landed.size_bytes)})` : ''}`));
        }),
      ),
    'pier db backups create orders --wait',
  );

  examples(
    backups
      .command('delete <database> <backup>')
      .description('Delete a backup')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .action(
        run(async (ctx, ref: string, name: string, o: { yes?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          await confirm(`delete backup ${name} of ${ref}`, name, o.yes);
          await unwrap(client.DELETE(`${BACKUPS}/{backupName}` as const, { params: { path: { ...path, backupName: name } } }));
          ctx.out.result({ deleted: name }, () => ctx.out.line(`Deleted backup ${name}.`));
        }),
      ),
    'pier db backups delete orders 20261125-031200 --yes',
  );

  examples(
    backups
      .command('schedule <database>')
      .description('Show or change when the database is backed up by itself (UTC) and how many of those backups are kept')
      .option('--cron <schedule>', 'five-field cron, UTC ("0 3 * * *")')
      .option('--retention <count>', 'scheduled backups kept, 1-100', integer)
      .option('--enable', 'turn scheduled backups on')
      .option('--disable', 'turn scheduled backups off')
      .action(
        run(async (ctx, ref: string, o: { cron?: string; retention?: number; enable?: boolean; disable?: boolean }) => {
          if (o.enable && o.disable) throw new CliError('--enable and --disable cannot go together', 'invalid_arguments', 2);
          const { client, path } = await database(ctx, ref);
          const body = JSON.parse(JSON.stringify({ schedule: o.cron, retention_count: o.retention, enabled: o.enable ? true : o.disable ? false : undefined }));
          const s = await unwrap(client.PATCH(`${BACKUPS}/schedule` as const, { params: { path }, body }));
          ctx.out.result(s, () =>
            ctx.out.fields([
              ['schedule', `${s.schedule} (UTC)`],
              ['enabled', s.enabled ? 'yes' : 'no'],
              ['keeps', `${s.retention_count} scheduled backups`],
              ['next run', s.next_run_at ?? '-'],
            ]),
          );
        }),
      ),
    'pier db backups schedule orders',
    'pier db backups schedule orders --cron "30 2 * * *" --retention 14',
  );

  examples(
    db
      .command('restore <database> <new-name>')
      .description('Restore a backup (postgresql: or a point in time) into a new database; the source is never touched')
      .option('--backup <name>', 'the backup (default: the newest; required for mysql)')
      .option('--time <iso8601>', 'postgresql: recover to this instant, e.g. 2026-11-25T06:00:00Z')
      .option('--wait', 'retry while a first backup is taken, then wait until the new database runs')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, name: string, o: WaitOptions & { backup?: string; time?: string }) => {
          const { client, path } = await database(ctx, ref);
          const body = JSON.parse(JSON.stringify({ name, backup_name: o.backup, target_time: o.time }));
          const landed = await createFromBackup(
            ctx,
            () => unwrap(client.POST(`${BACKUPS}/restore` as const, { params: { path }, body })),
            o,
            (databaseID) => unwrap(client.GET(DATABASE, { params: { path: { ...path, databaseID } } })),
          );
          ctx.out.result(landed, () => ctx.out.line(`Database ${landed.name} (${landed.id}), restored from ${ref}: ${landed.status}`));
        }),
      ),
    'pier db restore orders orders-copy --wait',
    'pier db restore orders orders-before-migration --time 2026-11-25T06:00:00Z --wait',
  );

  examples(
    db
      .command('fork <database> <new-name>')
      .description('Fork into a new, independent database from the newest backup, in this VPC or another of the workspace')
      .option('--to-vpc <vpc>', 'target VPC, name or id (default: the same VPC)')
      .option('--wait', 'retry while a first backup is taken, then wait until the fork runs')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, name: string, o: WaitOptions & { toVpc?: string }) => {
          const { client, path } = await database(ctx, ref);
          let target = path.vpcID;
          if (o.toVpc) {
            const workspaceID = path.workspaceID;
            target = await byNameOrId(
              o.toVpc,
              'VPC',
              () => paginate((cursor) => unwrap(client.GET(VPCS, { params: { path: { workspaceID }, query: { cursor } } }))),
              'pier vpcs list',
            );
          }
          const body = { name, ...(target === path.vpcID ? {} : { target_vpc_id: target }) };
          const landed = await createFromBackup(
            ctx,
            () => unwrap(client.POST(`${DATABASE}/fork` as const, { params: { path }, body })),
            o,
            (databaseID) => unwrap(client.GET(DATABASE, { params: { path: { workspaceID: path.workspaceID, vpcID: target, databaseID } } })),
          );
          ctx.out.result(landed, () => ctx.out.line(`Database ${landed.name} (${landed.id}), forked from ${ref}: ${landed.status}`));
        }),
      ),
    'pier db fork orders orders-staging --to-vpc staging --wait',
  );

  examples(
    db
      .command('replicas <database> <count>')
      .description('Set the read replica count (postgresql: read replicas; mysql: instances, odd)')
      .action(
        run(async (ctx, ref: string, count: string) => {
          const replicas = integer(count);
          const { client, path } = await database(ctx, ref);
          const d = await unwrap(client.PATCH(`${DATABASE}/replicas` as const, { params: { path }, body: { replicas } }));
          ctx.out.result(d, () =>
            ctx.out.line(
              `Database ${d.name}: ${d.replicas} replica${d.replicas === 1 ? '' : 's'} (${d.status}); they serve reads once they have copied the primary.`,
            ),
          );
        }),
      ),
    'pier db replicas orders 2',
  );
}
