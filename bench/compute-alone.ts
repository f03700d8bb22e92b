// Compute on its own for a benchmark: a fresh database on the benchmark's PostgreSQL, the
// docker cluster, and a caller signing its own identity token (as the gateway would) for
// one workspace and VPC. What the disk-backup and edge benchmarks share.
import { randomUUID } from 'node:crypto';
import { generateIdentityKeys, IDENTITY_HEADER, importIdentityKey, signIdentity, type RunningService } from '@pier/kit';
import { createTestDatabase, removeVpcObjects } from '@pier/testing';
import { readConfig, start } from '@pier/compute';
import type { Infra } from './infra.ts';

export interface ComputeAlone {
  compute: RunningService;
  vpcId: string;
  /** A request to the services API of the workspace/VPC as its owner; throws on a 4xx/5xx. */
  call(method: string, path: string, body?: unknown): Promise<any>;
  /** Stops compute, removes what it made in the VPC, drops the database. */
  stop(): Promise<void>;
}

export async function startComputeAlone(infra: Infra, env: Record<string, string>): Promise<ComputeAlone> {
  const db = await createTestDatabase(infra.postgresAdminUrl);
  const keys = await generateIdentityKeys();
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const compute = await start(
    readConfig({
      PIER_DATABASE_URL: db.urls.compute,
      PIER_NATS_URL: infra.natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_COMPUTE_HTTP_PORT: '0',
      PIER_LOG_LEVEL: 'error',
      PIER_COMPUTE_RECONCILE_INTERVAL_MS: '500',
      ...env,
    }),
  );
  const identity = await signIdentity(
    await importIdentityKey(keys.privateJwk),
    { kind: 'user', subject: randomUUID(), role: 'owner', workspaceId, vpcId },
    3600,
  );
  const base = `http://127.0.0.1:${compute.httpPort}/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
  return {
    compute,
    vpcId,
    async call(method, path, body) {
      const res = await fetch(base + path, {
        method,
        headers: { [IDENTITY_HEADER]: identity, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    },
    async stop() {
      await compute.stop();
      await removeVpcObjects(vpcId);
      await db.drop();
    },
  };
}
