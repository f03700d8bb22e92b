// Helpers of the databases end-to-end tests: polling a database's status, the real
// psql and mysql command-line clients, a client container inside a VPC's network, and
// cleanup of what the docker adapter created.
import { networkInterfaces } from 'node:os';
import { expect } from 'vitest';
import { vpcNetwork } from '@pier/kit';
import { RUN_LABELS, TEST_BACKUP_VOLUME, run, type Run } from '@pier/testing';
import type { Api } from '../support/platform.ts';

export { inVpc, mysqlCli, psql, run, RUN_LABELS, type Run } from '@pier/testing';

/** Environment of the databases service in these tests: its containers carry the run's labels; with a domain, the PostgreSQL listener takes any free port. */
export const DATABASES_ENV = {
  PIER_DATABASES_CONTAINER_LABELS: RUN_LABELS.join(','),
  PIER_DATABASES_BACKUP_VOLUME: TEST_BACKUP_VOLUME,
  PIER_DATABASES_POSTGRES_EXTERNAL_PORT: '0',
};

/** A non-loopback IPv4 address of this machine: connections to it keep it as their source. */
export function localAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('no non-loopback IPv4 address on this machine');
}

export async function waitForStatus(api: Api, path: string, want: string, timeoutMs = 120_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const res = await api.get(path);
    last = res.body;
    if (res.status === 200 && res.body.status === want) return res.body;
    if (res.status === 200 && want !== 'error' && res.body.status === 'error') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`status never became ${want}: ${JSON.stringify(last)}`);
}

export async function waitForGone(api: Api, path: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await api.get(path);
    if (res.status === 404) return;
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${path} still exists`);
}

// The docker CLI rather than a client library: the root package carries no Docker client.
const dockerCli = (args: string[]) => run('docker', args, { DOCKER_BUILDKIT: '0' });
const lines = (r: Run) =>
  r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** Names of the adapter's containers in this VPC (running or not). */
export async function databaseContainers(vpcId: string): Promise<string[]> {
  return lines(await dockerCli(['ps', '-a', '--filter', 'label=pier.service=databases', '--filter', `label=pier.vpc=${vpcId}`, '--format', '{{.Names}}']));
}

export async function databaseVolumes(vpcId: string): Promise<string[]> {
  return lines(await dockerCli(['volume', 'ls', '--filter', 'label=pier.service=databases', '--filter', `label=pier.vpc=${vpcId}`, '--format', '{{.Name}}']));
}

/** Removes whatever the docker adapter left for this VPC (containers, volumes, network). */
export async function cleanupVpc(vpcId: string): Promise<void> {
  const containers = await databaseContainers(vpcId);
  if (containers.length) await dockerCli(['rm', '-f', '-v', ...containers]);
  const volumes = await databaseVolumes(vpcId);
  if (volumes.length) await dockerCli(['volume', 'rm', '-f', ...volumes]);
  const net = await dockerCli(['network', 'inspect', vpcNetwork(vpcId), '--format', '{{index .Labels "pier.managed"}} {{len .Containers}}']);
  if (net.code === 0 && net.stdout.trim() === 'true 0') await dockerCli(['network', 'rm', vpcNetwork(vpcId)]);
}

/** `docker inspect` of one container, parsed. */
export async function inspect(name: string): Promise<any> {
  const r = await dockerCli(['inspect', name]);
  if (r.code !== 0) return undefined;
  return JSON.parse(r.stdout)[0];
}
