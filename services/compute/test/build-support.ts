// What the build tests share: compute set up to fetch from a local git server (allowlisted,
// over http), repositories whose Dockerfiles start from local images, archives made on the
// spot, and reading what a built service serves.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { docker, until, vpcContainers, type GitServer } from '@pier/testing';
import { IDENTITY_HEADER } from '@pier/kit';
import type { Compute } from './support.ts';

export const FINISHED = ['succeeded', 'failed', 'cancelled'];

/** A site only this test's repository holds: tiny-http serving `index.html`. */
export function site(marker: string): Record<string, string> {
  return {
    Dockerfile: 'FROM pier/tiny-http:1\nCOPY index.html /www/index.html\n',
    'index.html': `<!doctype html><p>${marker}</p>\n`,
  };
}

/**
 * A build that sits in a RUN step for ten minutes (for cancel, queue, timeout and restart).
 * `marker` makes its steps new to the engine (their layers are the build's own, not cache hits)
 * and names its step containers (their command carries it).
 */
export function sleeper(marker = randomUUID()): Record<string, string> {
  return { Dockerfile: `FROM pier/debian-base:bookworm\nRUN echo preparing ${marker} > /prepared\nRUN sleep 600 # ${marker}\n` };
}

/** The running step containers of sleeper(marker) builds. */
export async function sleeperContainers(marker: string): Promise<string[]> {
  return (await docker.listContainers({ all: true })).filter((c) => c.Command.includes(marker)).map((c) => c.Id);
}

/** The step container's id in a sleeper build's log, once that step runs. */
export const SLEEPING = /RUN sleep 600[^\n]*\n ---> Running in ([0-9a-f]+)/;

/** compute's settings for builds from `git` (its address allowlisted, plain http allowed). */
export async function buildEnv(git: GitServer, more: Record<string, string> = {}): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> {
  const work = await mkdtemp(path.join(tmpdir(), 'pier-build-test-'));
  return {
    env: {
      PIER_BUILD_ALLOWED_HOSTS: git.ip,
      PIER_BUILD_ALLOW_HTTP: 'true',
      PIER_BUILD_WORK_DIR: work,
      PIER_BUILD_INTERVAL_MS: '300',
      ...more,
    },
    cleanup: () => rm(work, { recursive: true, force: true }),
  };
}

export interface ArchiveEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  content?: string;
  linkname?: string;
}

/** A tar (gzip-compressed unless `gzip` is false) of exactly these entries, made without a filesystem. */
export async function archive(entries: ArchiveEntry[], gzip = true): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    const type = e.type ?? 'file';
    if (type === 'file') pack.entry({ name: e.name, mode: 0o644 }, e.content ?? '');
    else pack.entry({ name: e.name, type, linkname: e.linkname, mode: type === 'directory' ? 0o755 : 0o644, devmajor: 1, devminor: 3 });
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  return gzip ? gzipSync(raw) : raw;
}

/** POST builds/source-upload with `body` as it is. */
export async function upload(c: Compute, serviceId: string, body: Buffer, opts: { type?: string; query?: string; role?: 'owner' | 'developer' } = {}) {
  const res = await fetch(`${c.url}${c.base}/${serviceId}/builds/source-upload${opts.query ? `?${opts.query}` : ''}`, {
    method: 'POST',
    headers: { [IDENTITY_HEADER]: await c.token(opts.role ?? 'owner'), 'content-type': opts.type ?? 'application/gzip' },
    body: new Uint8Array(body),
  });
  return { status: res.status, body: await res.json() };
}

export function waitForBuild(
  c: Compute,
  serviceId: string,
  buildId: string,
  done: (b: any) => boolean = (b) => FINISHED.includes(b.status),
  ms = 120_000,
): Promise<any> {
  return until(() => c.get(`${c.base}/${serviceId}/builds/${buildId}`).then((r) => r.body), done, ms, 250);
}

/** The build's log once `pattern` appears in it. */
export function logMatching(c: Compute, serviceId: string, buildId: string, pattern: RegExp, ms = 60_000): Promise<string> {
  return until(
    () => c.get(`${c.base}/${serviceId}/builds/${buildId}/logs`).then((r) => String(r.body?.log ?? '')),
    (log) => pattern.test(log),
    ms,
    250,
  );
}

/** What the service's current deployment serves at `path` (from its container's VPC address). */
export async function served(vpcId: string, serviceId: string, deploymentId: string, urlPath = '/'): Promise<string> {
  const [container] = (await vpcContainers(vpcId, serviceId)).filter((x) => x.Labels['pier.deployment'] === deploymentId && x.State === 'running');
  if (!container) throw new Error(`no running container of deployment ${deploymentId}`);
  const ip = container.NetworkSettings.Networks[`pier-vpc-${vpcId}`]!.IPAddress;
  return (await fetch(`http://${ip}:8080${urlPath}`)).text();
}

/** Whether the engine still has this image (a tag or an id). */
export async function imageExists(ref: string): Promise<boolean> {
  return docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** Whether a container (of a build step, say) still exists. */
export async function containerExists(id: string): Promise<boolean> {
  return docker
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** Removes the images builds of these services made. */
export async function removeBuiltImages(...serviceIds: string[]): Promise<void> {
  for (const id of serviceIds) {
    for (const image of await docker.listImages({ filters: JSON.stringify({ reference: [`pier-build/${id}`] }) })) {
      await docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => undefined);
    }
  }
}
