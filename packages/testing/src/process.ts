// A service as its own process, as in production, so a test can kill it for real
// (SIGKILL at a crash point, see kit's crashPoint) and start it again on the same database.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunningService } from '@pier/kit';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const TSX = path.join(REPO_ROOT, 'node_modules/.bin/tsx');

export interface ServiceProcess extends RunningService {
  child: ChildProcess;
  /** Everything the process wrote (its JSON log lines), for assertions and failure messages. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
}

/**
 * Runs `services/<service>/src/main.ts` with `env` (merged over this process's), and
 * resolves once its "listening" log line names the HTTP port. `env` must set the port
 * variable to 0 or a free port, and PIER_LOG_LEVEL to at least `info`.
 * PIER_TEST_BUNDLES=<dir> runs `<dir>/<service>.mjs` with plain node instead: the bundles
 * the platform image runs (deploy/platform/bundle.ts), put through the same tests.
 */
export async function spawnService(service: string, env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  const bundles = process.env.PIER_TEST_BUNDLES;
  const [command, args] = bundles
    ? [process.execPath, [path.resolve(REPO_ROOT, bundles, `${service}.mjs`)]]
    : [TSX, [path.join(REPO_ROOT, `services/${service}/src/main.ts`)]];
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code ?? -1)));
  const ports = new Promise<{ http: number; grpc?: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${service} did not report listening within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      for (const line of out.split('\n')) {
        if (!line.includes('listening')) continue;
        try {
          const parsed = JSON.parse(line) as { port?: number; grpcPort?: number };
          if (typeof parsed.port === 'number') {
            clearTimeout(timer);
            resolve({ http: parsed.port, grpc: parsed.grpcPort });
          }
        } catch {
          // not a JSON line
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${service} exited (${how}) before listening:\n${out}`));
    });
  });
  const { http, grpc } = await ports;
  return {
    name: service,
    httpPort: http,
    grpcPort: grpc,
    child,
    output: () => out,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Whether a process of this PID exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `act` against a process armed with PIER_CRASH_AT=`point` (its answer, if any, cut off
 * by the crash) and resolves with how the process ended; fails with the process's output
 * when it is still alive after `ms` (the point never fired, or the request hung before it).
 */
export async function deathAt(armed: ServiceProcess, point: string, act: () => Promise<unknown>, ms = 60_000): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the process armed at ${point} was still alive after ${ms} ms:\n${armed.output()}`)), ms);
  });
  try {
    // The connection drops when the crash is in the request; a request that hangs short of the point is caught by `late`.
    await Promise.race([act().catch(() => undefined), late]);
    return await Promise.race([armed.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}
