// A real git server for build tests: pier/git-http (git-http-backend behind lighttpd, from
// Debian) in a container on the default bridge, reached at its container address, which a
// test must allowlist (PIER_BUILD_ALLOWED_HOSTS) for compute to fetch from it. Repositories
// are created in the container and filled by pushing over smart HTTP from a local checkout.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { docker, testLabels } from './docker.ts';

const run = promisify(execFile);
export const GIT_HTTP_IMAGE = 'pier/git-http:1';

export interface GitServer {
  /** The container's address: allowlist it, and use it in URLs. */
  ip: string;
  /** `http://<ip>/git/<name>.git` */
  url(name: string): string;
  /** A new bare repository that accepts pushes. */
  createRepo(name: string): Promise<void>;
  /**
   * Commits `files` (path -> content; `null` deletes) on `branch` of the local checkout of
   * `name` and pushes it; resolves with the new commit's id.
   */
  commit(name: string, files: Record<string, string | null>, message: string, branch?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startGitServer(): Promise<GitServer> {
  const container = await docker.createContainer({ Image: GIT_HTTP_IMAGE, Labels: testLabels(), HostConfig: { AutoRemove: false } });
  await container.start();
  const ip = (await container.inspect()).NetworkSettings.IPAddress;
  const work = await mkdtemp(path.join(tmpdir(), 'pier-git-work-'));
  const git = async (cwd: string, ...args: string[]) =>
    (
      await run('git', ['-c', 'user.name=Pier Test', '-c', 'user.email=test@pier.test', '-c', 'init.defaultBranch=main', ...args], {
        cwd,
        env: { PATH: process.env.PATH, HOME: work, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' },
      })
    ).stdout.trim();
  const url = (name: string) => `http://${ip}/git/${name}.git`;
  // lighttpd takes a moment to listen.
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://${ip}/`).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (i > 100) throw new Error('the git server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    ip,
    url,
    async createRepo(name) {
      const exec = await container.exec({ Cmd: ['pier-git-repo', name], AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({});
      await new Promise((resolve) => {
        stream.on('end', resolve);
        stream.resume();
      });
      const { ExitCode } = await exec.inspect();
      if (ExitCode !== 0) throw new Error(`pier-git-repo ${name} exited with ${ExitCode}`);
      const dir = path.join(work, name);
      await mkdir(dir, { recursive: true });
      await git(dir, 'init', '--quiet');
    },
    async commit(name, files, message, branch = 'main') {
      const dir = path.join(work, name);
      await git(dir, 'checkout', '--quiet', '-B', branch);
      for (const [file, content] of Object.entries(files)) {
        const full = path.join(dir, file);
        if (content === null) {
          await rm(full, { force: true });
          continue;
        }
        await mkdir(path.dirname(full), { recursive: true });
        await writeFile(full, content);
      }
      await git(dir, 'add', '--all');
      await git(dir, 'commit', '--quiet', '-m', message);
      await git(dir, 'push', '--quiet', url(name), branch);
      return git(dir, 'rev-parse', 'HEAD');
    },
    async stop() {
      await container.remove({ force: true }).catch(() => undefined);
      await rm(work, { recursive: true, force: true });
    },
  };
}
