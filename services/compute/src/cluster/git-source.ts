// Fetches a git build's source in compute, never in the daemon (`remote=` would let dockerd
// clone, resolving and following whatever it likes). The URL goes through the guard again at
// fetch time (a queued build may wait; DNS may have changed), the repository is probed over
// smart HTTP with every redirect checked like the URL itself, and then the git CLI fetches
// one commit, pinned to the checked address: `http.curloptResolve` makes curl connect there
// without a lookup of its own, redirects are not followed, only http(s) is allowed, and no
// prompt, credential helper, hook, proxy, submodule or LFS smudge runs.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UrlRefusedError, type CheckedUrl, type UrlGuard } from '@pier/kit';
import { BuildFailedError } from '../domain/builds/builder-port.ts';
import { isCommitId } from '../domain/builds/build-input.ts';

export interface GitFetchIo {
  signal: AbortSignal;
  log(text: string): void;
}

const SUFFIX = '/info/refs';

/** Re-checks the URL and finds the repository's address after checked redirects. */
async function locate(guard: UrlGuard, repoUrl: string, signal: AbortSignal): Promise<CheckedUrl> {
  try {
    const checked = await guard.check(repoUrl);
    const probe = new URL(checked.url.href);
    probe.pathname = `${probe.pathname.replace(/\/+$/, '')}${SUFFIX}`;
    probe.search = '?service=git-upload-pack';
    probe.hash = '';
    const { final, response } = await guard.request(
      { ...checked, url: probe },
      { headers: { 'user-agent': 'git/2 (pier)', 'git-protocol': 'version=2' }, signal, timeoutMs: 30_000 },
    );
    response.resume();
    const status = response.statusCode ?? 0;
    if (status === 401 || status === 403)
      throw new BuildFailedError(`repo_url: the repository asks for credentials (HTTP ${status}); only public repositories can be built`);
    if (status === 404) throw new BuildFailedError(`repo_url: no repository at ${checked.url.href} (HTTP 404)`);
    if (status !== 200) throw new BuildFailedError(`repo_url: the git server answered HTTP ${status}`);
    if (!String(response.headers['content-type'] ?? '').startsWith('application/x-git-upload-pack-advertisement')) {
      throw new BuildFailedError(`repo_url: ${checked.url.href} does not speak git's smart HTTP protocol`);
    }
    if (!final.url.pathname.endsWith(SUFFIX)) throw new BuildFailedError(`repo_url: redirected to ${final.url.href}, which is not a git repository`);
    const base = new URL(final.url.href);
    base.pathname = base.pathname.slice(0, -SUFFIX.length);
    base.search = '';
    return { ...final, url: base };
  } catch (err) {
    if (err instanceof UrlRefusedError) throw new BuildFailedError(err.message);
    if (err instanceof BuildFailedError || signal.aborted) throw err;
    throw new BuildFailedError(`repo_url: the repository could not be reached (${(err as Error).message})`);
  }
}

/** The `-c` options of every git command: pinned, no redirects, nothing run that the repository or the host configured. */
export function gitOptions(repo: CheckedUrl, allowHttp: boolean): string[] {
  const address = repo.family === 6 ? `[${repo.address}]` : repo.address;
  const settings = [
    'http.followRedirects=false',
    ...(repo.literal ? [] : [`http.curloptResolve=${repo.host}:${repo.port}:${address}`]),
    'http.proxy=',
    'http.lowSpeedLimit=1',
    'http.lowSpeedTime=60',
    'protocol.allow=never',
    'protocol.https.allow=always',
    ...(allowHttp ? ['protocol.http.allow=always'] : []),
    'core.hooksPath=/dev/null',
    'core.askPass=',
    'core.fsmonitor=false',
    'credential.helper=',
    'submodule.recurse=false',
    'transfer.fsckObjects=true',
    'init.defaultBranch=main',
    'advice.detachedHead=false',
  ];
  return settings.flatMap((s) => ['-c', s]);
}

/** The git commands that fetch `ref` (the default branch when null) of `url` into `dir`, depth 1. */
export function gitCommands(url: string, ref: string | null, dir: string): string[][] {
  if (ref && isCommitId(ref)) {
    // A commit is not a ref a clone can name: fetch exactly that commit.
    return [
      ['init', '--quiet', dir],
      ['-C', dir, 'fetch', '--depth', '1', '--no-tags', '--progress', '--', url, ref],
      ['-C', dir, 'checkout', '--quiet', '--detach', 'FETCH_HEAD'],
    ];
  }
  return [['clone', '--depth', '1', '--single-branch', '--no-tags', '--progress', ...(ref ? ['--branch', ref] : []), '--', url, dir]];
}

function runGit(args: string[], env: NodeJS.ProcessEnv, io: GitFetchIo): Promise<string> {
  return new Promise((resolve, reject) => {
    // Its own process group: git starts git-remote-http, and a cancel must stop both.
    const child = spawn('git', args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let tail = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString();
      tail = (tail + text).slice(-2000);
      io.log(text);
    });
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    io.signal.addEventListener('abort', kill, { once: true });
    child.on('error', (err) => reject(new BuildFailedError(`git could not be started: ${err.message}`)));
    child.on('close', (code) => {
      io.signal.removeEventListener('abort', kill);
      if (io.signal.aborted) return reject(io.signal.reason);
      if (code === 0) return resolve(out.trim());
      const last = tail.trim().split(/\r|\n/).filter(Boolean).pop() ?? `exit code ${code}`;
      reject(new BuildFailedError(`git ${args.find((a) => ['clone', 'fetch', 'checkout', 'init', 'rev-parse'].includes(a))} failed: ${last}`));
    });
  });
}

/** Fetches the source into `dir` (which must not exist); resolves with the commit it holds. */
export async function fetchRepository(guard: UrlGuard, allowHttp: boolean, repoUrl: string, ref: string | null, dir: string, io: GitFetchIo): Promise<string> {
  const repo = await locate(guard, repoUrl, io.signal);
  io.log(`[pier] fetching ${repo.url.href}${ref ? ` at ${ref}` : ''} (connecting to ${repo.address})\n`);
  const home = await mkdtemp(path.join(tmpdir(), 'pier-git-home-'));
  try {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      LC_ALL: 'C',
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: allowHttp ? 'https:http' : 'https',
      GIT_PROTOCOL_FROM_USER: '0',
      GIT_LFS_SKIP_SMUDGE: '1',
    };
    const options = gitOptions(repo, allowHttp);
    for (const command of gitCommands(repo.url.href, ref, dir)) await runGit([...options, ...command], env, io);
    const sha = await runGit(['-C', dir, 'rev-parse', 'HEAD'], env, io);
    io.log(`[pier] at commit ${sha}\n`);
    return sha;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
