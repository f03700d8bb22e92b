// pier services: container services of the VPC — list, create, show, update, deploy,
// restart, rollback, deployments, delete. Environment variables: commands/env.ts; a shell
// in a replica: commands/shell.ts; what replicas print: commands/logs.ts; builds:
// commands/builds.ts; uptime monitoring: commands/uptime.ts; custom domains: commands/domains.ts;
// disk backups: commands/disk-backups.ts.
import type { Command } from 'commander';
import { paginate, unwrap } from '@pier/sdk';
import { collect, examples, group, integer, run, WAIT_TIMEOUT } from '../command.ts';
import type { Context } from '../context.ts';
import { allServices, collectAll, confirm, service, SERVICE, SERVICES, waitForRollout } from '../resources.ts';
import { waitUntilDeleted } from '../wait.ts';
import { register as registerEnv } from './env.ts';
import { register as registerShell } from './shell.ts';
import { register as registerLogs } from './logs.ts';
import { register as registerBuilds } from './builds.ts';
import { register as registerUptime } from './uptime.ts';
import { register as registerDomains } from './domains.ts';
import { register as registerDiskBackups } from './disk-backups.ts';
import { register as registerMetrics } from './metrics.ts';

type ServiceRecord = Awaited<ReturnType<typeof readService>>['record'];

interface ConfigOptions {
  name?: string;
  type?: 'web' | 'worker' | 'cron';
  instanceType?: string;
  onDemand?: boolean;
  deploymentMode?: 'always_on' | 'on_demand';
  idleTimeout?: number;
  targetConcurrency?: number;
  image?: string;
  port?: number;
  healthCheckPath?: string;
  minReplicas?: number;
  maxReplicas?: number;
  cron?: string;
  diskSizeGb?: number;
  diskMountPath?: string;
  command?: string[];
  arg?: string[];
  runAsUser?: number;
}

interface WaitOptions {
  wait?: boolean;
  timeout: number;
}

/** The configuration fields given on the command line, as the API names them. */
function configBody(o: ConfigOptions) {
  const body: Record<string, unknown> = {
    name: o.name,
    service_type: o.type,
    instance_type: o.instanceType,
    deployment_mode: o.deploymentMode ?? (o.onDemand === undefined ? undefined : o.onDemand ? 'on_demand' : 'always_on'),
    idle_timeout_seconds: o.idleTimeout,
    target_concurrency: o.targetConcurrency,
    image: o.image,
    port: o.port,
    health_check_path: o.healthCheckPath,
    min_replicas: o.minReplicas,
    max_replicas: o.maxReplicas,
    cron_schedule: o.cron,
    disk_size_gb: o.diskSizeGb,
    disk_mount_path: o.diskMountPath,
    command: o.command,
    args: o.arg,
    run_as_user: o.runAsUser,
  };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

function configOptions(command: Command): Command {
  return command
    .option('--type <type>', 'web, worker or cron (default web)')
    .option('--instance-type <type>', 'svc.nano (default) to svc.xlarge')
    .option('--deployment-mode <mode>', 'always_on (default), or on_demand: sleeps when idle, woken by the next request')
    .option('--on-demand', 'short for --deployment-mode on_demand')
    .option('--idle-timeout <seconds>', 'on_demand: seconds with no request before it sleeps (10-86400, default 900)', integer)
    .option('--target-concurrency <n>', 'web: requests in flight per replica the autoscaler aims at (1-1000, default 25)', integer)
    .option('--image <ref>', 'image to run, e.g. registry.example.com/team/web:1.4')
    .option('--port <port>', 'port the process listens on (web: default 8080)', integer)
    .option('--health-check-path <path>', 'HTTP path probed for readiness, e.g. /healthz')
    .option('--min-replicas <n>', 'lower bound (default 1; 0 with --on-demand)', integer)
    .option('--max-replicas <n>', 'upper bound for autoscaling', integer)
    .option('--cron <schedule>', 'cron schedule (required with --type cron), e.g. "*/5 * * * *"')
    .option('--disk-size-gb <n>', 'attach a persistent volume of this size', integer)
    .option('--disk-mount-path <path>', 'where the volume is mounted')
    .option('--command <part>', 'entrypoint override, one part per flag (repeat it)', collect)
    .option('--arg <part>', 'arguments override, one per flag (repeat it)', collect)
    .option('--run-as-user <uid>', 'container UID (default 1000)', integer);
}

function waitOptions(command: Command): Command {
  return command.option('--wait', 'wait until the rollout lands (running, or crashed: exit 1)').option(...WAIT_TIMEOUT);
}

async function readService(ctx: Context, ref: string) {
  const { client, path } = await service(ctx, ref);
  return { client, path, record: await unwrap(client.GET(SERVICE, { params: { path } })) };
}

async function waitForService(ctx: Context, ref: string, timeout: number, name = ref) {
  const { client, path } = await service(ctx, ref);
  return waitForRollout(client, path, name, timeout);
}

function showService(ctx: Context, s: ServiceRecord) {
  ctx.out.fields([
    ['name', s.name],
    ['id', s.id],
    ['status', s.status_message ? `${s.status} (${s.status_message})` : s.status],
    ['type', s.service_type],
    ['url', s.url],
    ['instance', `${s.instance_type} (${s.resources.cpu} CPU, ${s.resources.memory_mib} MiB)`],
    ['mode', s.deployment_mode],
    ['image', s.image],
    ['port', s.port],
    ['health check', s.health_check_path],
    ['replicas', `${s.replicas.ready} ready of ${s.replicas.desired} (${s.max_replicas ? `${s.min_replicas}..${s.max_replicas}` : s.min_replicas})`],
    ['idle timeout', s.idle_timeout_seconds === null ? null : `${s.idle_timeout_seconds} s`],
    ['target concurrency', s.target_concurrency],
    ['cron', s.cron_schedule],
    ['disk', s.disk_size_gb ? `${s.disk_size_gb} GB at ${s.disk_mount_path ?? '-'}` : null],
    ['command', s.command],
    ['args', s.args],
    ['run as user', s.run_as_user],
    ['deployment', s.current_deployment_id],
    ['created', s.created_at],
  ]);
}

/** Prints a rollout's answer (202 {service, deployment}), waiting for it with --wait. */
async function rolledOut(
  ctx: Context,
  ref: string,
  answer: { service: ServiceRecord; deployment: { id: string; image: string; reason: string } },
  o: WaitOptions,
) {
  const landed = o.wait ? await waitForService(ctx, ref, o.timeout) : answer.service;
  ctx.out.result(o.wait ? { ...answer, service: landed } : answer, () =>
    ctx.out.line(
      `${answer.deployment.reason} of ${answer.service.name}: deployment ${answer.deployment.id} (${answer.deployment.image}), service ${landed.status}`,
    ),
  );
}

export function register(program: Command): void {
  const services = group(program, 'services', 'Container services of the VPC');

  examples(
    services
      .command('list')
      .description('List the services of the VPC with their live status')
      .action(
        run(async (ctx) => {
          const items = await collectAll(allServices(await ctx.client(), await ctx.scope()));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'NAME', value: (s) => s.name },
              { header: 'TYPE', value: (s) => s.service_type },
              { header: 'STATUS', value: (s) => s.status },
              { header: 'INSTANCE', value: (s) => s.instance_type },
              { header: 'REPLICAS', value: (s) => (s.max_replicas ? `${s.min_replicas}..${s.max_replicas}` : s.min_replicas) },
              { header: 'IMAGE', value: (s) => s.image },
              { header: 'ID', value: (s) => s.id },
            ]),
          );
        }),
      ),
    'pier services list',
    'pier services list --json | jq -r ".[].name"',
  );

  examples(
    waitOptions(configOptions(services.command('create <name>').description('Create a service; with --image its first deployment starts at once'))).action(
      run(async (ctx, name: string, o: ConfigOptions & WaitOptions) => {
        const client = await ctx.client();
        const path = await ctx.scope();
        const created = await unwrap(client.POST(SERVICES, { params: { path }, body: { ...configBody(o), name } as never }));
        const landed = o.wait && created.current_deployment_id ? await waitForService(ctx, created.id, o.timeout, created.name) : created;
        ctx.out.result(landed, () => ctx.out.line(`Created service ${landed.name} (${landed.id}): ${landed.status}`));
      }),
    ),
    'pier services create web --image pier/tiny-http:1 --port 8080 --health-check-path / --wait',
    'pier services create nightly --type cron --cron "0 3 * * *" --image registry.example.com/jobs:2 --command /bin/report',
  );

  examples(
    services
      .command('show <service>')
      .description('One service (name or id) with its live status')
      .action(
        run(async (ctx, ref: string) => {
          const { record } = await readService(ctx, ref);
          ctx.out.result(record, () => showService(ctx, record));
        }),
      ),
    'pier services show web',
  );

  examples(
    waitOptions(configOptions(services.command('update <service>').description('Change the configuration; a deployed service rolls out with it')))
      .option('--name <name>', 'rename the service')
      .option('--always-on', 'stop scaling to zero (deployment_mode always_on)')
      .action(
        run(async (ctx, ref: string, o: ConfigOptions & WaitOptions & { alwaysOn?: boolean }) => {
          const { client, path } = await service(ctx, ref);
          const body = configBody({ ...o, onDemand: o.alwaysOn ? false : o.onDemand });
          const updated = await unwrap(client.PATCH(SERVICE, { params: { path }, body: body as never }));
          const landed = o.wait ? await waitForService(ctx, updated.id, o.timeout, updated.name) : updated;
          ctx.out.result(landed, () => ctx.out.line(`Updated ${landed.name}: ${landed.status}`));
        }),
      ),
    'pier services update web --instance-type svc.small --min-replicas 2 --wait',
  );

  examples(
    waitOptions(
      services
        .command('deploy <service> <image>')
        .description("Deploy an image: a bare tag goes on the service's image repository, a full reference is used as it is"),
    ).action(
      run(async (ctx, ref: string, image: string, o: WaitOptions) => {
        const { client, path } = await service(ctx, ref);
        await rolledOut(ctx, ref, await unwrap(client.POST(`${SERVICE}/deploy` as const, { params: { path }, body: { image_tag: image } })), o);
      }),
    ),
    'pier services deploy web 1.5 --wait',
    'pier services deploy web registry.example.com/team/web:1.5',
  );

  examples(
    waitOptions(services.command('restart <service>').description('Restart on the same image (new containers)')).action(
      run(async (ctx, ref: string, o: WaitOptions) => {
        const { client, path } = await service(ctx, ref);
        await rolledOut(ctx, ref, await unwrap(client.POST(`${SERVICE}/restart` as const, { params: { path } })), o);
      }),
    ),
    'pier services restart web --wait',
  );

  examples(
    waitOptions(
      services.command('rollback <service> <deployment>').description("Roll back to an earlier deployment's image (see pier services deployments)"),
    ).action(
      run(async (ctx, ref: string, deploymentId: string, o: WaitOptions) => {
        const { client, path } = await service(ctx, ref);
        await rolledOut(ctx, ref, await unwrap(client.POST(`${SERVICE}/rollback` as const, { params: { path }, body: { deployment_id: deploymentId } })), o);
      }),
    ),
    'pier services rollback web 5f0c2a8e-4d1b-4c49-9a57-2b8f3d1e6c70 --wait',
  );

  examples(
    services
      .command('deployments <service>')
      .description('Deployment history, newest first')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          const items = await collectAll(paginate((cursor) => unwrap(client.GET(`${SERVICE}/deployments` as const, { params: { path, query: { cursor } } }))));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'ID', value: (d) => d.id },
              { header: 'REASON', value: (d) => (d.rollback_of ? `rollback of ${d.rollback_of.slice(0, 8)}` : d.reason) },
              { header: 'STATUS', value: (d) => d.status },
              { header: 'IMAGE', value: (d) => d.image },
              { header: 'CREATED', value: (d) => d.created_at },
              { header: 'MESSAGE', value: (d) => d.message },
            ]),
          );
        }),
      ),
    'pier services deployments web',
  );

  examples(
    services
      .command('delete <service>')
      .description('Delete the service and everything it runs (its disk included)')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .option('--wait', 'wait until it is gone')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: WaitOptions & { yes?: boolean }) => {
          const { client, path, record } = await readService(ctx, ref);
          await confirm(`delete service ${record.name}`, record.name, o.yes);
          const deleting = await unwrap(client.DELETE(SERVICE, { params: { path } }));
          if (o.wait) await waitUntilDeleted(`service ${record.name}`, async () => (await client.GET(SERVICE, { params: { path } })).data, o.timeout);
          ctx.out.result(deleting, () => ctx.out.line(`Service ${record.name} ${o.wait ? 'deleted' : 'is being deleted'}.`));
        }),
      ),
    'pier services delete web --yes --wait',
  );

  registerEnv(services);
  registerShell(services);
  registerLogs(services);
  registerBuilds(services);
  registerUptime(services);
  registerDomains(services);
  registerDiskBackups(services);
  registerMetrics(services);
}
