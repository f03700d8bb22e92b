import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { inject } from 'vitest';
import { generateIdentityKeys, importIdentityKey, signIdentity, vpcNetwork, type RunningService } from '@pier/kit';
import { createTestDatabase } from '@pier/testing';
import { readConfig, start, type StartOptions } from '../src/index.ts';

/** The suite's PostgreSQL and NATS (global setup), or servers named in the environment. */
export function infra(): { postgresAdminUrl: string; natsUrl: string } {
  const get = (key: 'postgresAdminUrl' | 'natsUrl') => {
    try {
      return inject(key) || undefined;
    } catch {
      return undefined;
    }
  };
  const postgresAdminUrl = get('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL;
  const natsUrl = get('natsUrl') ?? process.env.PIER_TEST_NATS_URL;
  if (!postgresAdminUrl || !natsUrl) throw new Error('no test PostgreSQL/NATS: run under the suite global setup or set PIER_TEST_POSTGRES_URL / PIER_TEST_NATS_URL');
  return { postgresAdminUrl, natsUrl };
}

export interface Harness {
  running: RunningService;
  db: Awaited<ReturnType<typeof createTestDatabase>>;
  workspaceId: string;
  vpcId: string;
  base: string;
  /** fetch against the service as an Owner of the workspace/VPC; JSON in and out. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/** The databases service alone, against a fresh test database, called as its Owner. */
export async function startDatabases(env: Record<string, string> = {}, options: StartOptions = {}): Promise<Harness> {
  const { postgresAdminUrl, natsUrl } = infra();
  const db = await createTestDatabase(postgresAdminUrl);
  const keys = await generateIdentityKeys();
  const running = await start(
    readConfig({
      PIER_DATABASE_URL: db.urls.databases,
      PIER_NATS_URL: natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_DATABASES_HTTP_PORT: '0',
      PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'warn',
      PIER_DATABASES_CONTAINER_LABELS: ['pier.test=true', ...(process.env.PIER_TEST_RUN ? [`pier.test.run=${process.env.PIER_TEST_RUN}`] : [])].join(','),
      ...env,
    }),
    options,
  );
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const key = await importIdentityKey(keys.privateJwk);
  const url = `http://127.0.0.1:${running.httpPort}`;
  return {
    running,
    db,
    workspaceId,
    vpcId,
    base: `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/databases`,
    async call(method, path, body) {
      const token = await signIdentity(key, { kind: 'user', subject: 'owner', workspaceId, vpcId, role: 'owner' }, 60);
      const res = await fetch(url + path, {
        method,
        headers: { 'x-pier-identity': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async stop() {
      await running.stop();
      await db.drop();
      await removeVpcLeftovers(vpcId);
    },
  };
}

function docker(args: string[]): Promise<string> {
  return new Promise((resolve) => execFile('docker', args, (_e, stdout) => resolve(String(stdout))));
}

/** Containers, volumes and the network the docker adapter made for this VPC. */
export async function removeVpcLeftovers(vpcId: string): Promise<void> {
  const filters = ['--filter', 'label=pier.service=databases', '--filter', `label=pier.vpc=${vpcId}`];
  const containers = (await docker(['ps', '-aq', ...filters])).split('\n').filter(Boolean);
  if (containers.length) await docker(['rm', '-f', '-v', ...containers]);
  const volumes = (await docker(['volume', 'ls', '-q', ...filters])).split('\n').filter(Boolean);
  if (volumes.length) await docker(['volume', 'rm', '-f', ...volumes]);
  await docker(['network', 'rm', vpcNetwork(vpcId)]);
}

export async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 250));
  }
}
