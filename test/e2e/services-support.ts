// Helpers for the services end-to-end tests: the Docker engine seen through its CLI (the
// containers compute made carry `pier.managed=true` and `pier.vpc=<id>`), and polling.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Api } from '../support/platform.ts';

const run = promisify(execFile);

export const TINY_HTTP = 'pier/tiny-http:1';
export const EXITS = 'pier/exits:1';

export async function dockerCli(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { env: { ...process.env, DOCKER_BUILDKIT: '0' } });
  return stdout.trim();
}

/** Ids of the containers compute runs for one service. */
export async function containersOf(serviceId: string): Promise<string[]> {
  const out = await dockerCli('ps', '-aq', '--filter', 'label=pier.managed=true', '--filter', `label=pier.service=${serviceId}`);
  return out ? out.split('\n') : [];
}

export async function inspect(containerId: string): Promise<any> {
  return JSON.parse(await dockerCli('inspect', containerId))[0];
}

/** Removes what compute made in these VPCs: containers, volumes, networks. */
export async function cleanVpcs(...vpcIds: string[]): Promise<void> {
  for (const vpc of vpcIds) {
    const filter = ['--filter', 'label=pier.managed=true', '--filter', `label=pier.vpc=${vpc}`];
    const ids = await dockerCli('ps', '-aq', ...filter).catch(() => '');
    if (ids) await dockerCli('rm', '-f', ...ids.split('\n')).catch(() => '');
    const volumes = await dockerCli('volume', 'ls', '-q', ...filter).catch(() => '');
    if (volumes) await dockerCli('volume', 'rm', '-f', ...volumes.split('\n')).catch(() => '');
    const networks = await dockerCli('network', 'ls', '-q', ...filter).catch(() => '');
    if (networks) await dockerCli('network', 'rm', ...networks.split('\n')).catch(() => '');
  }
}

/** Polls a service's detail until its status is `want`. */
export async function waitForStatus(api: Api, path: string, want: string, ms = 30_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(path);
    if (res.body?.status === want) return res.body;
    if (Date.now() > deadline) throw new Error(`${path} did not reach ${want} within ${ms} ms: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
