// pier services build / builds: images built from a public git repository or from a local
// directory or archive (the CLI tars a directory itself), deployed unless --no-deploy; the
// builds of a service, their logs (followed as server-sent events) and cancel.
import { lstat, readdir, readFile, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Command } from 'commander';
import tar from 'tar-stream';
import { paginate, unwrap, type PierClient } from '@pier/sdk';
import { examples, group, run, WAIT_TIMEOUT } from '../command.ts';
import type { Context, Scope } from '../context.ts';
import { CliError } from '../errors.ts';
import { collectAll, service, SERVICE, waitForRollout } from '../resources.ts';
import { waitFor } from '../wait.ts';
import { serverSentEvents } from '../sse.ts';

const BUILDS = `${SERVICE}/builds` as const;
const BUILD = `${SERVICE}/builds/{buildID}` as const;

type ServicePath = Scope & { serviceID: string };
type BuildRecord = Awaited<ReturnType<typeof readBuild>>;

interface BuildOptions {
  git?: string;
  ref?: string;
  upload?: string;
  dockerfile?: string;
  context?: string;
  deploy: boolean;
  wait?: boolean;
  timeout: number;
}

const FAILED = ['failed', 'cancelled'];

function readBuild(client: PierClient, path: ServicePath & { buildID: string }) {
  return unwrap(client.GET(BUILD, { params: { path } }));
}

/** Directories the CLI never sends (a repository's metadata is not part of its source). */
const SKIPPED = new Set(['.git']);

/** A gzip'd tar of `dir`: files, directories and links as links (never followed). */
export async function tarDirectory(dir: string): Promise<Buffer> {
  const pack = tar.pack();
  const add = (header: Parameters<typeof pack.entry>[0], content?: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const done = (err?: Error | null) => (err ? reject(err) : resolve());
      if (content) pack.entry(header, content, done);
      else pack.entry(header, done);
    });
  const walk = async (full: string, rel: string): Promise<void> => {
    for (const name of (await readdir(full)).sort()) {
      if (SKIPPED.has(name)) continue;
      const file = path.join(full, name);
      const entry = rel ? `${rel}/${name}` : name;
      const st = await lstat(file);
      const common = { name: entry, mode: st.mode & 0o777, mtime: st.mtime };
      if (st.isDirectory()) {
        await add({ ...common, type: 'directory' });
        await walk(file, entry);
      } else if (st.isSymbolicLink()) await add({ ...common, type: 'symlink', linkname: await readlink(file) });
      else if (st.isFile()) await add({ ...common, type: 'file', size: st.size }, await readFile(file));
    }
  };
  const chunks: Buffer[] = [];
  const collected = (async () => {
    for await (const c of pack) chunks.push(c as Buffer);
  })();
  await walk(dir, '');
  pack.finalize();
  await collected;
  return gzipSync(Buffer.concat(chunks));
}

/** The archive to upload for `--upload`: a directory is packed here, a file sent as it is. */
async function uploadBody(source: string): Promise<{ body: Buffer; type: string }> {
  const st = await stat(source).catch(() => undefined);
  if (!st) throw new CliError(`--upload: ${source} does not exist`, 'invalid_argument', 2);
  const body = st.isDirectory() ? await tarDirectory(source) : await readFile(source);
  return { body, type: body[0] === 0x1f && body[1] === 0x8b ? 'application/gzip' : 'application/x-tar' };
}

function showBuild(ctx: Context, b: BuildRecord): void {
  ctx.out.fields([
    ['id', b.id],
    ['status', b.error ? `${b.status} (${b.error})` : b.status],
    ['source', b.source === 'git' ? `${b.repo_url}${b.ref ? ` @ ${b.ref}` : ''}` : 'upload'],
    ['commit', b.commit_sha],
    ['dockerfile', b.dockerfile_path],
    ['context', b.context_dir],
    ['image', b.image],
    ['deploy', b.deploy],
    ['deployment', b.deployment_id],
    ['created', b.created_at],
    ['started', b.started_at],
    ['finished', b.finished_at],
  ]);
}

/** Prints the log as it grows until the build ends; resolves with the build as it ended. */
async function followLog(ctx: Context, client: PierClient, path: ServicePath & { buildID: string }): Promise<BuildRecord> {
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  try {
    const body = await unwrap(
      client.GET(`${BUILD}/logs`, {
        params: { path, query: { follow: 'true' } },
        headers: { accept: 'text/event-stream' },
        parseAs: 'stream',
        signal: stop.signal,
      }),
    );
    for await (const e of serverSentEvents(body as ReadableStream<Uint8Array>)) {
      if (e.event === 'log') {
        // Build output is text as the builder wrote it: passed on as it is (stderr with --json).
        (ctx.out.json ? process.stderr : process.stdout).write((e.data as { text: string }).text);
      } else if (e.event === 'status') return e.data as BuildRecord;
      else if (e.event === 'reconnect')
        throw new CliError('the API restarted (the build goes on): follow it again with pier services builds logs', 'stream_restarted');
    }
    throw new CliError('the log stream ended before the build did', 'stream_ended');
  } catch (err) {
    if (stop.signal.aborted) throw new CliError('interrupted (the build goes on; pier services builds cancel stops it)', 'interrupted');
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

/** Fails the command when a build ended failed or cancelled. */
function checkEnded(b: BuildRecord): void {
  if (FAILED.includes(b.status)) throw new CliError(`build ${b.id} ${b.status}${b.error ? `: ${b.error}` : ''}`, `ended_${b.status}`);
}

async function waitForBuild(ctx: Context, client: PierClient, path: ServicePath & { buildID: string }, timeout: number): Promise<BuildRecord> {
  return waitFor({
    what: `build ${path.buildID.slice(0, 8)}`,
    read: () => readBuild(client, path),
    status: (b) => b.status,
    done: ['succeeded'],
    failed: FAILED,
    reason: (b) => b.error,
    timeoutSeconds: timeout,
  });
}

export function register(services: Command): void {
  examples(
    services
      .command('build <service>')
      .description('Build an image from a public git repository (--git) or a local directory or archive (--upload), and deploy it')
      .option('--git <url>', 'a public repository, https://host/path (no credentials)')
      .option('--ref <ref>', 'with --git: a branch, a tag or a full commit id (default: the default branch)')
      .option('--upload <dir|archive>', 'a directory (packed here, without .git) or a .tar / .tar.gz')
      .option('--dockerfile <path>', 'the Dockerfile, relative to the root of the source (default Dockerfile)')
      .option('--context <dir>', 'the build context, relative to the root of the source (default .)')
      .option('--no-deploy', 'build the image only, without deploying it')
      .option('--wait', 'wait for the build to end (and its deployment to land), printing its log; exit 1 if it fails')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, o: BuildOptions) => {
          if (Boolean(o.git) === Boolean(o.upload)) throw new CliError('give exactly one of --git <url> and --upload <dir|archive>', 'invalid_argument', 2);
          if (o.ref && !o.git) throw new CliError('--ref goes with --git', 'invalid_argument', 2);
          const { client, path } = await service(ctx, ref);
          const paths = { dockerfile_path: o.dockerfile, context_dir: o.context };
          let queued: BuildRecord;
          if (o.git) {
            queued = await unwrap(client.POST(`${BUILDS}/git`, { params: { path }, body: { repo_url: o.git, ref: o.ref, ...paths, deploy: o.deploy } }));
          } else {
            const { body, type } = await uploadBody(o.upload!);
            queued = await unwrap(
              client.POST(`${BUILDS}/source-upload`, {
                params: { path, query: { ...paths, deploy: o.deploy ? 'true' : 'false' } },
                body: body as never,
                bodySerializer: (b: unknown) => b as never,
                headers: { 'content-type': type },
              }),
            );
          }
          if (!o.wait) {
            ctx.out.result(queued, () => ctx.out.line(`Build ${queued.id} queued; follow it with: pier services builds logs ${ref} ${queued.id} --follow`));
            return;
          }
          const build = { ...path, buildID: queued.id };
          const ended = ctx.out.json ? await waitForBuild(ctx, client, build, o.timeout) : await followLog(ctx, client, build);
          checkEnded(ended);
          if (ended.deployment_id) await waitForRollout(client, path, ref, o.timeout);
          ctx.out.result(ended, () => ctx.out.line(`Built ${ended.image}${ended.deployment_id ? `, deployed as ${ended.deployment_id}` : ''}`));
        }),
      ),
    'pier services build web --git https://github.com/acme/web --ref v1.4 --wait',
    'pier services build web --upload . --dockerfile docker/Dockerfile --wait',
    'pier services build web --upload site.tar.gz --no-deploy',
  );

  const builds = group(services, 'builds', 'Builds of a service: list, show, logs, cancel');

  examples(
    builds
      .command('list <service>')
      .description('Builds of the service, newest first')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          const items = await collectAll(paginate((cursor) => unwrap(client.GET(BUILDS, { params: { path, query: { cursor } } }))));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'ID', value: (b) => b.id },
              { header: 'STATUS', value: (b) => b.status },
              { header: 'SOURCE', value: (b) => (b.source === 'git' ? `${b.repo_url}${b.ref ? `@${b.ref}` : ''}` : 'upload') },
              { header: 'COMMIT', value: (b) => b.commit_sha?.slice(0, 12) },
              { header: 'DEPLOYMENT', value: (b) => b.deployment_id },
              { header: 'CREATED', value: (b) => b.created_at },
              { header: 'ERROR', value: (b) => b.error },
            ]),
          );
        }),
      ),
    'pier services builds list web',
  );

  examples(
    builds
      .command('show <service> <build>')
      .description('One build')
      .action(
        run(async (ctx, ref: string, buildID: string) => {
          const { client, path } = await service(ctx, ref);
          const b = await readBuild(client, { ...path, buildID });
          ctx.out.result(b, () => showBuild(ctx, b));
        }),
      ),
    'pier services builds show web 5f0c2a8e-4d1b-4c49-9a57-2b8f3d1e6c70',
  );

  examples(
    builds
      .command('logs <service> <build>')
      .description("A build's log; with --follow, as it grows until the build ends (exit 1 if it fails)")
      .option('-f, --follow', 'print the log as it grows until the build ends')
      .action(
        run(async (ctx, ref: string, buildID: string, o: { follow?: boolean }) => {
          const { client, path } = await service(ctx, ref);
          if (o.follow) {
            const ended = await followLog(ctx, client, { ...path, buildID });
            if (ctx.out.json) process.stdout.write(`${JSON.stringify(ended, null, 2)}\n`);
            checkEnded(ended);
            return;
          }
          const log = await unwrap(client.GET(`${BUILD}/logs`, { params: { path: { ...path, buildID } } }));
          ctx.out.result(log, () => process.stdout.write(log.log));
        }),
      ),
    'pier services builds logs web 5f0c2a8e-4d1b-4c49-9a57-2b8f3d1e6c70 --follow',
  );

  examples(
    builds
      .command('cancel <service> <build>')
      .description('Stop a queued or running build (it leaves no image)')
      .action(
        run(async (ctx, ref: string, buildID: string) => {
          const { client, path } = await service(ctx, ref);
          const b = await unwrap(client.POST(`${BUILD}/cancel`, { params: { path: { ...path, buildID } } }));
          ctx.out.result(b, () => ctx.out.line(`Build ${b.id} ${b.status}`));
        }),
      ),
    'pier services builds cancel web 5f0c2a8e-4d1b-4c49-9a57-2b8f3d1e6c70',
  );
}
