// pier db: managed PostgreSQL and MySQL — list, create, show, update, delete, connection,
// connect (the real psql/mysql), query, schema, slow queries. Allowlist: allowlist.ts;
// backups, restore, fork and replicas: backups.ts; what may be created: database-engines.ts.
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { unwrap } from '@pier/sdk';
import { examples, group, integer, run, WAIT_TIMEOUT } from '../command.ts';
import type { Context } from '../context.ts';
import { CliError } from '../errors.ts';
import { allDatabases, collectAll, confirm, database, DATABASE, DATABASES } from '../resources.ts';
import { waitFor, waitUntilDeleted } from '../wait.ts';
import { register as registerAllowlist } from './allowlist.ts';
import { register as registerBackups } from './backups.ts';
import { register as registerEngines } from './database-engines.ts';

interface WaitOptions {
  wait?: boolean;
  timeout: number;
}

async function waitForRunning(ctx: Context, ref: string, timeout: number, name = ref) {
  const { client, path } = await database(ctx, ref);
  return waitFor({
    what: `database ${name}`,
    read: () => unwrap(client.GET(DATABASE, { params: { path } })),
    status: (d) => d.status,
    done: ['running'],
    failed: ['error'],
    reason: (d) => d.status_reason,
    timeoutSeconds: timeout,
  });
}

const version = (d: { engine: string; postgres_version: string | null; mysql_version: string | null }) =>
  `${d.engine} ${d.engine === 'postgresql' ? d.postgres_version : d.mysql_version}`;

/** Runs the engine's own client with the external details; its exit code is the command's. */
function runClient(command: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    // The password goes in the environment, never on the command line (`ps` shows that).
    const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
    child.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new CliError(
              `${command} is not installed (Debian: apt-get install ${command === 'psql' ? 'postgresql-client' : 'mariadb-client'})`,
              'client_missing',
            )
          : err,
      ),
    );
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

export function register(program: Command): void {
  const db = group(program, 'db', 'Managed PostgreSQL and MySQL databases of the VPC');

  examples(
    db
      .command('list')
      .description('List the databases of the VPC with their live status')
      .action(
        run(async (ctx) => {
          const items = await collectAll(allDatabases(await ctx.client(), await ctx.scope()));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'NAME', value: (d) => d.name },
              { header: 'ENGINE', value: version },
              { header: 'STATUS', value: (d) => d.status },
              { header: 'INSTANCE', value: (d) => d.instance_type },
              { header: 'STORAGE', value: (d) => `${d.storage_gb} GB` },
              { header: 'REPLICAS', value: (d) => d.replicas },
              { header: 'EXTERNAL', value: (d) => (d.external_access_enabled ? 'on' : 'off') },
              { header: 'ID', value: (d) => d.id },
            ]),
          );
        }),
      ),
    'pier db list',
  );

  examples(
    db
      .command('create <name>')
      .description('Provision a database (status creating, then running)')
      .option('--engine <engine>', 'postgresql (default) or mysql')
      .option('--instance-type <type>', 'svc.nano (postgresql default) to svc.xlarge; mysql: svc.micro or more (default svc.small)')
      .option('--storage-gb <n>', 'disk size', integer)
      .option('--version <major>', 'engine version (postgres_version / mysql_version)')
      .option('--replicas <n>', 'read replicas (mysql: odd counts)', integer)
      .option('--external-access', 'reachable from outside the platform')
      .option('--wait', 'wait until it is running (error: exit 1)')
      .option(...WAIT_TIMEOUT)
      .action(
        run(
          async (
            ctx,
            name: string,
            o: WaitOptions & { engine?: string; instanceType?: string; storageGb?: number; version?: string; replicas?: number; externalAccess?: boolean },
          ) => {
            const client = await ctx.client();
            const body: Record<string, unknown> = {
              name,
              engine: o.engine,
              instance_type: o.instanceType,
              storage_gb: o.storageGb,
              replicas: o.replicas,
              external_access_enabled: o.externalAccess,
              [o.engine === 'mysql' ? 'mysql_version' : 'postgres_version']: o.version,
            };
            const created = await unwrap(client.POST(DATABASES, { params: { path: await ctx.scope() }, body: JSON.parse(JSON.stringify(body)) }));
            const landed = o.wait ? await waitForRunning(ctx, created.id, o.timeout, created.name) : created;
            ctx.out.result(landed, () => ctx.out.line(`Database ${landed.name} (${landed.id}, ${version(landed)}): ${landed.status}`));
          },
        ),
      ),
    'pier db create orders --wait',
    'pier db create shop --engine mysql --instance-type svc.small --external-access --wait',
  );

  examples(
    db
      .command('show <database>')
      .description('One database (name or id) with its live status')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await database(ctx, ref);
          const d = await unwrap(client.GET(DATABASE, { params: { path } }));
          ctx.out.result(d, () =>
            ctx.out.fields([
              ['name', d.name],
              ['id', d.id],
              ['short id', d.short_id],
              ['engine', version(d)],
              ['status', d.status_reason ? `${d.status} (${d.status_reason})` : d.status],
              ['instance', d.instance_type],
              ['storage', `${d.storage_gb} GB`],
              ['replicas', d.replicas],
              ['external', d.external_access_enabled ? 'on' : 'off'],
              [
                'made from',
                d.source
                  ? `${d.source.kind} of ${d.source.database_id}, backup ${d.source.backup_name}${d.source.target_time ? ` at ${d.source.target_time}` : ''}`
                  : '-',
              ],
              ['created', d.created_at],
            ]),
          );
        }),
      ),
    'pier db show orders',
  );

  examples(
    db
      .command('update <database>')
      .description('Rename, resize (storage only grows), or turn external access on or off')
      .option('--name <name>', 'new name')
      .option('--instance-type <type>', 'new instance type')
      .option('--storage-gb <n>', 'new disk size (larger only)', integer)
      .option('--external-access', 'turn external access on')
      .option('--no-external-access', 'turn external access off')
      .option('--wait', 'wait until it is running again')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: WaitOptions & { name?: string; instanceType?: string; storageGb?: number; externalAccess?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          const body = JSON.parse(
            JSON.stringify({ name: o.name, instance_type: o.instanceType, storage_gb: o.storageGb, external_access_enabled: o.externalAccess }),
          );
          const updated = await unwrap(client.PATCH(DATABASE, { params: { path }, body }));
          const landed = o.wait ? await waitForRunning(ctx, updated.id, o.timeout, updated.name) : updated;
          ctx.out.result(landed, () => ctx.out.line(`Updated ${landed.name}: ${landed.status}`));
        }),
      ),
    'pier db update orders --storage-gb 20 --external-access',
  );

  examples(
    db
      .command('delete <database>')
      .description('Delete the database and its data')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .option('--wait', 'wait until it is gone')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: WaitOptions & { yes?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          const d = await unwrap(client.GET(DATABASE, { params: { path } }));
          await confirm(`delete database ${d.name} and its data`, d.name, o.yes);
          const deleting = await unwrap(client.DELETE(DATABASE, { params: { path } }));
          if (o.wait) await waitUntilDeleted(`database ${d.name}`, async () => (await client.GET(DATABASE, { params: { path } })).data, o.timeout);
          ctx.out.result(deleting, () => ctx.out.line(`Database ${d.name} ${o.wait ? 'deleted' : 'is being deleted'}.`));
        }),
      ),
    'pier db delete orders --yes',
  );

  examples(
    db
      .command('connection <database>')
      .description('Connection details; the password is shown only with --show-password (--json shows it, as the API does)')
      .option('--show-password', 'print the password too')
      .action(
        run(async (ctx, ref: string, o: { showPassword?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          const c = await unwrap(client.GET(`${DATABASE}/connection` as const, { params: { path } }));
          const hide = (url: string | null) => (url && !o.showPassword ? url.replace(`:${encodeURIComponent(c.password)}@`, ':****@') : url);
          ctx.out.result(c, () =>
            ctx.out.fields([
              ['host', `${c.host}:${c.port}`],
              ['database', c.database],
              ['username', c.username],
              ['password', o.showPassword ? c.password : '**** (--show-password)'],
              ['url', hide(c.database_url)],
              ['read-only url', hide(c.read_only_url)],
              ['pooler', c.pooler_host],
              ['external url', hide(c.external_url)],
              ['external read-only url', hide(c.external_url_ro)],
            ]),
          );
        }),
      ),
    'pier db connection orders',
    'pier db connection orders --json | jq -r .external_url',
  );

  examples(
    db
      .command('connect <database> [client-args...]')
      .description('Open psql or mysql on the database from this machine (needs external access); arguments after -- go to the client')
      .option('--read-only', 'connect to the read-only endpoint')
      .action(
        run(async (ctx, ref: string, clientArgs: string[], o: { readOnly?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          const c = await unwrap(client.GET(`${DATABASE}/connection` as const, { params: { path } }));
          const host = o.readOnly ? c.external_host_ro : c.external_host;
          // A replica may listen on a port of its own (docker without a domain).
          const port = o.readOnly ? (c.external_port_ro ?? c.external_port) : c.external_port;
          if (!host || !port) {
            throw new CliError(
              `external access is off for ${ref}: pier db update ${ref} --external-access (the internal host only answers inside the VPC)`,
              'external_access_off',
            );
          }
          const code =
            c.engine === 'postgresql'
              ? await runClient('psql', [`postgresql://${encodeURIComponent(c.username)}@${host}:${port}/${c.database}`, ...clientArgs], {
                  PGPASSWORD: c.password,
                })
              : await runClient('mysql', ['-h', host, '-P', String(port), '-u', c.username, c.database, ...clientArgs], { MYSQL_PWD: c.password });
          process.exitCode = code;
        }),
      ),
    'pier db connect orders',
    'pier db connect orders -- -c "select count(*) from users"',
  );

  examples(
    db
      .command('query <database> <sql>')
      .description('Run one SQL statement through the API (Owner or Admin; timeout and row cap apply)')
      .action(
        run(async (ctx, ref: string, sql: string) => {
          const { client, path } = await database(ctx, ref);
          const r = await unwrap(client.POST(`${DATABASE}/query` as const, { params: { path }, body: { sql } }));
          ctx.out.result(r, () => {
            if (r.columns.length) {
              ctx.out.table(
                r.rows,
                r.columns.map((col, i) => ({ header: col.name, value: (row: unknown[]) => row[i] })),
                '(no rows)',
              );
            }
            ctx.out.line(`${r.command} ${r.row_count}${r.truncated ? ' (truncated: the row cap applies)' : ''}`);
          });
        }),
      ),
    'pier db query orders "select id, email from users limit 5"',
  );

  examples(
    db
      .command('schema <database>')
      .description('Tables, columns, primary keys and indexes')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await database(ctx, ref);
          const s = await unwrap(client.GET(`${DATABASE}/schema` as const, { params: { path } }));
          ctx.out.result(s, () => {
            if (!s.tables.length) ctx.out.line('no tables');
            for (const t of s.tables) {
              ctx.out.line(`${t.schema}.${t.name}${t.primary_key.length ? `  (primary key: ${t.primary_key.join(', ')})` : ''}`);
              for (const col of t.columns)
                ctx.out.line(`  ${col.name.padEnd(24)} ${col.type}${col.nullable ? '' : ' not null'}${col.default !== null ? ` default ${col.default}` : ''}`);
              for (const ix of t.indexes.filter((i) => !i.primary)) ctx.out.line(`  index ${ix.name} (${ix.columns.join(', ')})${ix.unique ? ' unique' : ''}`);
            }
          });
        }),
      ),
    'pier db schema orders',
  );

  examples(
    db
      .command('slow-queries <database>')
      .description('Slowest statements by mean time')
      .option('--limit <n>', 'how many (1-100, default 20)', integer)
      .option('--reset', 'clear the statistics instead (Owner or Admin)')
      .action(
        run(async (ctx, ref: string, o: { limit?: number; reset?: boolean }) => {
          const { client, path } = await database(ctx, ref);
          if (o.reset) {
            await unwrap(client.POST(`${DATABASE}/slow-queries/reset` as const, { params: { path } }));
            ctx.out.result({ reset: true }, () => ctx.out.line('Slow-query statistics cleared.'));
            return;
          }
          const r = await unwrap(client.GET(`${DATABASE}/slow-queries` as const, { params: { path, query: { limit: o.limit } } }));
          ctx.out.result(r.items, () =>
            ctx.out.table(r.items, [
              { header: 'MEAN MS', value: (q) => q.mean_time_ms.toFixed(2) },
              { header: 'MAX MS', value: (q) => q.max_time_ms.toFixed(2) },
              { header: 'CALLS', value: (q) => q.calls },
              { header: 'ROWS', value: (q) => q.rows },
              { header: 'QUERY', value: (q) => q.query.replace(/\s+/g, ' ').slice(0, 100) },
            ]),
          );
        }),
      ),
    'pier db slow-queries orders --limit 5',
  );

  registerAllowlist(db);
  registerBackups(db);
  registerEngines(db);
}
