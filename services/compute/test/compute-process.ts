/**
 * Compute as its own process, for the tests that kill it for real: a crash point
 * (PIER_CRASH_AT) SIGKILLs it in the middle of an operation, and the next process on the same
 * records and the same Docker engine must finish or undo what was left.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { IDENTITY_HEADER, generateIdentityKeys, importIdentityKey, signIdentity } from '@pier/kit';
import { deathAt, infra, spawnService, type ServiceProcess, type TestDatabase } from '@pier/testing';

export class ComputeProcess {
  private proc?: ServiceProcess;

  private constructor(
    private readonly env: Record<string, string>,
    /** An owner's identity token of the scope: every call is signed with it. */
    private readonly token: string,
  ) {}

  /** Compute on `db`, acting for an owner of `scope`, with `env` beside what every such process needs; started. */
  static async start(db: TestDatabase, scope: { workspaceId: string; vpcId: string }, env: Record<string, string> = {}): Promise<ComputeProcess> {
    const keys = await generateIdentityKeys();
    const token = await signIdentity(await importIdentityKey(keys.privateJwk), { kind: 'user', subject: randomUUID(), role: 'owner', ...scope }, 3600);
    const process = new ComputeProcess(
      {
        PIER_DATABASE_URL: db.urls.compute,
        PIER_NATS_URL: infra().natsUrl,
        PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
        PIER_COMPUTE_HTTP_PORT: '0',
        // spawnService learns the port from the "listening" line.
        PIER_LOG_LEVEL: 'info',
        PIER_COMPUTE_RECONCILE_INTERVAL_MS: '500',
        PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: '5',
        // The edge (one proxy container for the machine) only where a test asks for it.
        PIER_EDGE: 'off',
        ...env,
      },
      token,
    );
    await process.spawn();
    return process;
  }

  async spawn(env: Record<string, string> = {}): Promise<ServiceProcess> {
    // PIER_CRASH_AT may be in this process's own environment: only `env` arms it.
    this.proc = await spawnService('compute', { ...this.env, PIER_CRASH_AT: '', ...env });
    return this.proc;
  }

  /** The process spawned last (a test of several processes keeps each one it spawned). */
  get current(): ServiceProcess {
    return this.proc!;
  }

  /** The HTTP port of the running process (a WebSocket test connects to it). */
  get httpPort(): number {
    return this.proc!.httpPort;
  }

  /** The PID of the running process (tsx, with compute's node below it). */
  get pid(): number {
    return this.proc!.child.pid!;
  }

  /** The owner's identity header every call carries. */
  headers(): Record<string, string> {
    return { [IDENTITY_HEADER]: this.token };
  }

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(`http://127.0.0.1:${this.proc!.httpPort}${path}`, {
      method,
      headers: { [IDENTITY_HEADER]: this.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  /** Starts a process armed to die at `point`, runs `act` (whose answer the crash may cut off), and waits for the death. */
  async crashAt(point: string, act: () => Promise<unknown>): Promise<void> {
    await this.stop();
    const armed = await this.spawn({ PIER_CRASH_AT: point });
    const how = await deathAt(armed, point, act);
    // tsx relays its child's death by SIGKILL as exit status 128 + 9.
    expect([137, 'SIGKILL'], armed.output()).toContain(how);
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
  }
}
