import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { clusterUnavailable, dockerFault, isDockerNotFound, UnavailableError } from '@pier/kit';

// Small helpers over the Docker Engine API that the adapter needs and dockerode leaves
// to the caller: error translation, idempotent removal, exec with its exit code.

/**
 * Connection failures mean the cluster is unreachable, and an engine that answers 5xx
 * failed on its side: both are a 503, not our failure. An engine out of address pools
 * cannot make the VPC's network: a 503 naming that (it answers 404, which is no missing
 * object here). Any other refusal is the adapter's to read.
 */
export function translateDockerError(err: unknown): never {
  const fault = dockerFault(err);
  if (fault?.kind === 'unreachable') throw clusterUnavailable(`docker engine unreachable (${fault.detail})`);
  if (fault?.kind === 'failed') throw clusterUnavailable(`docker engine error: ${fault.reason}`);
  if (fault?.kind === 'exhausted')
    throw new UnavailableError(`the docker engine has no address pool left for the VPC's network: ${fault.reason}`, 'cluster_error');
  throw err;
}

export async function ignoreNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (isDockerNotFound(err)) return undefined;
    throw err;
  }
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs a command in a container (argv, no shell) and waits for it. */
export async function exec(docker: Docker, containerId: string, cmd: string[]): Promise<ExecResult> {
  const container = docker.getContainer(containerId);
  const e = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await e.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks = { out: [] as Buffer[], err: [] as Buffer[] };
  out.on('data', (c: Buffer) => chunks.out.push(c));
  err.on('data', (c: Buffer) => chunks.err.push(c));
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const info = await e.inspect();
  return {
    exitCode: info.ExitCode ?? -1,
    stdout: Buffer.concat(chunks.out).toString('utf8'),
    stderr: Buffer.concat(chunks.err).toString('utf8'),
  };
}

/** stdout and stderr of a non-TTY container's logs, read as one buffer (8-byte frame headers). */
export function demuxLogs(buf: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  for (let i = 0; i + 8 <= buf.length;) {
    const size = buf.readUInt32BE(i + 4);
    (buf[i] === 2 ? err : out).push(buf.subarray(i + 8, i + 8 + size));
    i += 8 + size;
  }
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** Runs a one-off container to its end and removes it; its exit code and output. */
export async function runToEnd(docker: Docker, spec: Docker.ContainerCreateOptions): Promise<ExecResult> {
  const container = await docker.createContainer(spec);
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const logs = (await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    return { exitCode: StatusCode, ...demuxLogs(logs) };
  } finally {
    await ignoreNotFound(container.remove({ force: true }));
  }
}

export function envOf(info: Docker.ContainerInspectInfo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of info.Config.Env ?? []) {
    const i = kv.indexOf('=');
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}
