import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { which } from './which.ts';
import type { ParentDeath } from './parent-death.ts';
import { natsServerConfig, type NatsUser } from '../platform/nats-config.ts';

const exec = promisify(execFile);

export interface RunningNats {
  url: string;
  /**
   * A service's PIER_NATS_USER and PIER_NATS_PASSWORD for the NATS the launcher started (it
   * admits only these users, each to its own subjects); nothing for PIER_NATS_URL, whose
   * URL is used as it stands (`nats://user:password@host:port` gives every service that user).
   */
  credentials(user: NatsUser): NodeJS.ProcessEnv;
  /** How it was found, for the summary. */
  how: string;
  stop(): Promise<void>;
}

export class MissingDependency extends Error {}

const CONTAINER = 'pier-local-nats';

/** Resolves once something accepts TCP connections on the port. */
async function waitForPort(port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (!alive()) throw new Error('NATS exited during start-up');
    if (Date.now() > deadline) throw new Error(`NATS did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function dockerAnswers(): Promise<boolean> {
  try {
    await exec('docker', ['version', '--format', '{{.Server.Version}}'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

async function localImage(): Promise<string | null> {
  for (const image of ['pier/nats:2', 'nats:2']) {
    try {
      await exec('docker', ['image', 'inspect', image], { timeout: 5000 });
      return image;
    } catch {
      /* not present */
    }
  }
  return null;
}

/** Writes the server's configuration (it holds every service's password: 0600) and returns its path. */
async function writeConfig(file: string, text: string): Promise<string> {
  await writeFile(file, text, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}

/**
 * NATS with JetStream, in order of preference: PIER_NATS_URL; a `nats-server` on PATH,
 * started with its store under `<home>/nats`; a container from the local `pier/nats:2`
 * (or `nats:2`) image when a Docker engine answers. Otherwise a MissingDependency saying
 * how to get one. Never installs anything itself (`./pier up` installs Debian's nats-server
 * before it starts the launcher). The nats-server child stops with the launcher, however the
 * launcher dies; a container cannot be tied to it, so a SIGKILL leaves that one running
 * until the next start removes it. A NATS the launcher starts has a user per service, each
 * allowed only its own subjects (deploy/platform/nats-config.ts), and no anonymous access.
 */
export async function findNats(home: string, port: number, death: ParentDeath, passwords: Record<NatsUser, string>): Promise<RunningNats> {
  if (process.env.PIER_NATS_URL) {
    return { url: process.env.PIER_NATS_URL, how: 'PIER_NATS_URL', credentials: () => ({}), stop: async () => undefined };
  }
  const credentials = (user: NatsUser) => ({ PIER_NATS_USER: user, PIER_NATS_PASSWORD: passwords[user] });
  const binary = which('nats-server');
  if (binary) {
    const store = path.join(home, 'nats');
    await mkdir(store, { recursive: true });
    const config = await writeConfig(path.join(home, 'nats-server.conf'), natsServerConfig({ listen: `127.0.0.1:${port}`, storeDir: store, passwords }));
    const [cmd, args] = death.wrap(binary, ['-c', config], 'SIGTERM');
    const child: ChildProcess = spawn(cmd, args, {
      detached: true, // own process group: Ctrl-C reaches the launcher, which stops NATS after the services
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (d: Buffer) => {
      if (output.length < 10_000) output += d.toString();
    });
    try {
      await waitForPort(port, 10_000, () => child.exitCode === null);
    } catch (err) {
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${output.trim().split('\n').slice(-5).join('\n')}`, { cause: err });
    }
    return {
      url: `nats://127.0.0.1:${port}`,
      how: `${binary} (JetStream store in ${store}, a user per service: ${config})`,
      credentials,
      stop: () =>
        new Promise((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    };
  }
  if (await dockerAnswers()) {
    const image = await localImage();
    if (image) {
      // Our own container from an earlier run that did not stop cleanly.
      await exec('docker', ['rm', '-f', CONTAINER]).catch(() => undefined);
      const config = await writeConfig(
        path.join(home, 'nats-container.conf'),
        natsServerConfig({ listen: '0.0.0.0:4222', storeDir: '/var/lib/nats', passwords }),
      );
      // Over the path pier/nats:2 always loads; the official image is told to load it.
      const args = image.startsWith('pier/') ? ['-js'] : ['--config', '/etc/nats/nats-server.conf', '-js'];
      await exec('docker', [
        'run',
        '-d',
        '--rm',
        '--name',
        CONTAINER,
        '--label',
        'pier.local=true',
        '-p',
        `127.0.0.1:${port}:4222`,
        '-v',
        `${config}:/etc/nats/nats-server.conf:ro`,
        image,
        ...args,
      ]);
      await waitForPort(port, 15_000, () => true);
      return {
        url: `nats://127.0.0.1:${port}`,
        how: `Docker container ${CONTAINER} (${image}), a user per service`,
        credentials,
        stop: async () => {
          await exec('docker', ['stop', '-t', '5', CONTAINER]).catch(() => undefined);
        },
      };
    }
  }
  throw new MissingDependency(
    [
      'Pier needs a NATS server with JetStream, and none was found:',
      '  - PIER_NATS_URL is not set',
      '  - no `nats-server` on PATH',
      (await dockerAnswers()) ? '  - Docker answers, but neither pier/nats:2 nor nats:2 is present locally' : '  - no Docker engine answers',
      'Any one of these fixes it:',
      '  - Debian/Ubuntu: apt-get install nats-server        (then run ./pier up again)',
      '  - macOS: brew install nats-server',
      '  - other systems: https://docs.nats.io/running-a-nats-service/introduction/installation',
      '  - with Docker: deploy/images/build.sh (builds pier/nats:2), or docker pull nats:2',
      '  - or point at a running one: PIER_NATS_URL=nats://host:4222 ./pier up',
    ].join('\n'),
  );
}
