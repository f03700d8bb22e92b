// One way to start a service under test: on a fresh database of the suite's PostgreSQL,
// the suite's NATS, trusting identity tokens the harness signs for whichever role a test
// needs, with its log lines captured. Each service's test/support.ts adds only what is
// its own (ports, cluster settings, cleanup of what its adapter made).
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { generateIdentityKeys, importIdentityKey, signIdentity, IDENTITY_HEADER, type Role, type RunningService, type ServiceSchema } from '@pier/kit';
import { createTestDatabase, type TestDatabase } from './database.ts';

export type IdentityKeys = Awaited<ReturnType<typeof generateIdentityKeys>>;

/** The suite's PostgreSQL and NATS (vitest's global setup), or servers named in the environment. */
export function infra(): { postgresAdminUrl: string; natsUrl: string } {
  const provided = (key: 'postgresAdminUrl' | 'natsUrl'): string | undefined => {
    try {
      return inject(key) || undefined;
    } catch {
      return undefined; // outside vitest (the benchmarks)
    }
  };
  const postgresAdminUrl = provided('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL;
  const natsUrl = provided('natsUrl') ?? process.env.PIER_TEST_NATS_URL;
  if (!postgresAdminUrl || !natsUrl) {
    throw new Error('no test PostgreSQL/NATS: run under vitest (test/global-setup.ts) or set PIER_TEST_POSTGRES_URL and PIER_TEST_NATS_URL');
  }
  return { postgresAdminUrl, natsUrl };
}

/** Collects a service's log lines (pino JSON), to search them. */
export class LogCapture extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(chunk.toString());
    cb();
  }
  get text(): string {
    return this.chunks.join('');
  }
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Scope {
  workspaceId: string;
  vpcId: string;
}

export interface CallOptions {
  role?: Role;
  /** Call with this identity token instead of one for `role`. */
  token?: string;
  /** Call in another workspace/VPC than the harness's own. */
  scope?: Scope;
  headers?: Record<string, string>;
}

export interface ServiceUnderTest<R extends RunningService> {
  running: R;
  url: string;
  db: TestDatabase;
  natsUrl: string;
  /** The identity key pair the service trusts (auth's, in production). */
  keys: IdentityKeys;
  /** The environment it was started with; `restart` merges changes into it. */
  env: Record<string, string>;
  logs: LogCapture;
  workspaceId: string;
  vpcId: string;
  /** An identity token for a user of the harness's workspace/VPC (or `scope`) with `role`. */
  token(role?: Role, scope?: Scope): Promise<string>;
  /** fetch against the service, as `role` (default owner); JSON in and out. */
  request<T = any>(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<Response<T>>;
  get<T = any>(path: string, role?: Role): Promise<Response<T>>;
  post<T = any>(path: string, body?: unknown, role?: Role): Promise<Response<T>>;
  restart(env?: Record<string, string | undefined>): Promise<void>;
  stop(): Promise<void>;
}

export interface ServiceUnderTestSpec<R extends RunningService> {
  /** Whose role and schema the service connects as. */
  schema: ServiceSchema;
  /** Starts the service from its environment, its log lines going to `logs`. */
  start(env: Record<string, string>, logs: Writable): Promise<R>;
  /** The service's own variables (ports 0, cluster settings); `undefined` removes one. */
  env?: Record<string, string | undefined>;
  /** A database shared with other services under test (its creator drops it). */
  db?: TestDatabase;
  keys?: IdentityKeys;
}

export async function startServiceUnderTest<R extends RunningService>(spec: ServiceUnderTestSpec<R>): Promise<ServiceUnderTest<R>> {
  const { postgresAdminUrl, natsUrl } = infra();
  const db = spec.db ?? (await createTestDatabase(postgresAdminUrl));
  const keys = spec.keys ?? (await generateIdentityKeys());
  const privateKey = await importIdentityKey(keys.privateJwk);
  const env: Record<string, string> = {};
  const merge = (more: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(more)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
  };
  merge({
    PIER_DATABASE_URL: db.urls[spec.schema],
    PIER_NATS_URL: natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'warn',
    ...spec.env,
  });
  const logs = new LogCapture();
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const tokens = new Map<string, Promise<string>>();
  const token = (role: Role = 'owner', scope: Scope = { workspaceId, vpcId }) => {
    const key = `${role}:${scope.workspaceId}:${scope.vpcId}`;
    if (!tokens.has(key)) {
      tokens.set(key, signIdentity(privateKey, { kind: 'user', subject: randomUUID(), email: `${role}@example.test`, role, ...scope }, 3600));
    }
    return tokens.get(key)!;
  };

  const h: ServiceUnderTest<R> = {
    running: undefined as unknown as R,
    url: '',
    db,
    natsUrl,
    keys,
    env,
    logs,
    workspaceId,
    vpcId,
    token,
    async request(method, path, body, opts = {}) {
      const res = await fetch(h.url + path, {
        method,
        headers: {
          [IDENTITY_HEADER]: opts.token ?? (await token(opts.role, opts.scope)),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...opts.headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      const json = res.headers.get('content-type')?.includes('json');
      return { status: res.status, body: text ? (json ? JSON.parse(text) : text) : undefined, headers: res.headers };
    },
    get: (path, role) => h.request('GET', path, undefined, { role }),
    post: (path, body, role) => h.request('POST', path, body, { role }),
    async restart(more = {}) {
      await h.running?.stop();
      merge(more);
      h.running = await spec.start({ ...env }, logs);
      h.url = `http://127.0.0.1:${h.running.httpPort}`;
    },
    async stop() {
      await h.running?.stop();
      if (!spec.db) await db.drop();
    },
  };
  try {
    await h.restart();
  } catch (err) {
    if (!spec.db) await db.drop();
    throw err;
  }
  return h;
}

/** Polls `read` until `done` holds, and returns that value (or fails with the last one seen). */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean = (v) => v !== undefined, ms = 30_000, every = 250): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, every));
    last = await read();
  }
  return last;
}

/**
 * Where freePort picks: below Linux's ephemeral range (32768-60999), which the kernel hands
 * out to outgoing connections and to listen(0). A port picked there could be taken by one
 * of those (another test's) before the service it was picked for binds it; below it, only
 * another pick can.
 */
const PICKED = { min: 20_000, max: 32_768 } as const;

/**
 * A loopback port nothing listens on (bound, then released): a dependency that is down, or
 * a port chosen up front for a service other services must be told of before it starts.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = PICKED.min + Math.floor(Math.random() * (PICKED.max - PICKED.min));
    const srv = net.createServer();
    const bound = await new Promise<boolean>((resolve) => {
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (bound) {
      await new Promise<void>((r) => srv.close(() => r()));
      return port;
    }
    if (attempt > 100) throw new Error('no free port found below the ephemeral range');
  }
}
