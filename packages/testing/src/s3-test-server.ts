/**
 * A real S3-compatible server for tests: the local image pier/s3-test:1 (versitygw, built by
 * `deploy/images/build.sh s3-test`), HTTPS on a published port, with a certificate made at
 * its start, whose PEM clients are given as their CA. Labelled with the suite's labels, so
 * `./pier test` removes it even if a run dies before `stop`.
 */
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import type { S3Store } from '@pier/kit';
import { docker, testLabels } from './docker.ts';

export const S3_TEST_IMAGE = 'pier/s3-test:1';

/** The store as clients are told of it (its certificate's PEM to trust), and levers of its own. */
export interface S3TestServer extends Omit<S3Store, 'prefix' | 'caPem'> {
  caPem: string;
  /** Object keys in the bucket (from the server's own directory: no S3 client needed). */
  keys(): Promise<string[]>;
  stop(): Promise<void>;
}

/** A non-loopback IPv4 address of this machine: containers reach a store published there. */
export function machineAddress(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no non-loopback IPv4 address');
}

/** Runs `cmd` in the container; its standard output (a non-zero exit throws). */
export async function execText(container: Docker.Container, cmd: string[]): Promise<string> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  docker.modem.demuxStream(stream, out, new PassThrough());
  await new Promise<void>((resolve, reject) => {
    stream.on('end', () => resolve());
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`${cmd.join(' ')} exited ${ExitCode}`);
  return Buffer.concat(chunks).toString('utf8');
}

/** Any HTTPS answer (an unsigned request gets a 403) means the server is up. */
function answers(host: string, port: number, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.request({ host, port, path: '/', method: 'GET', ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * `hostname`: the address clients reach the store at (default 127.0.0.1, this process only).
 * Containers (backup tools) need one of this machine's own addresses (machineAddress()): the
 * store then listens on all of them, and its certificate names that one.
 */
export async function startS3TestServer(bucket = 'pier-backups', hostname = '127.0.0.1'): Promise<S3TestServer> {
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(18).toString('hex');
  const container = await docker.createContainer({
    Image: S3_TEST_IMAGE,
    Env: [`S3_ACCESS_KEY=${accessKeyId}`, `S3_SECRET_KEY=${secretAccessKey}`, `S3_BUCKETS=${bucket}`, `S3_HOSTNAME=${hostname}`],
    Labels: testLabels(),
    ExposedPorts: { '443/tcp': {} },
    HostConfig: { PortBindings: { '443/tcp': [{ HostIp: hostname === '127.0.0.1' ? hostname : '0.0.0.0', HostPort: '' }] }, AutoRemove: false },
  });
  const stop = () =>
    container.remove({ force: true, v: true }).then(
      () => undefined,
      () => undefined,
    );
  try {
    await container.start();
    const port = Number((await container.inspect()).NetworkSettings.Ports['443/tcp']![0]!.HostPort);
    let caPem = '';
    for (let i = 0; ; i++) {
      // The certificate is made before the server starts; the server is up once it answers.
      caPem ||= await execText(container, ['cat', '/certs/cert.pem']).catch(() => '');
      if (caPem && (await answers(hostname, port, caPem))) break;
      if (i >= 100) throw new Error(`the S3 test server did not come up on ${hostname}:${port}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      host: hostname,
      port,
      bucket,
      region: 'us-east-1',
      accessKeyId,
      secretAccessKey,
      caPem,
      async keys() {
        const out = await execText(container, ['find', `/data/${bucket}`, '-type', 'f', '-not', '-path', '*/.sgwtmp/*']);
        return out
          .split('\n')
          .filter(Boolean)
          .map((f) => f.slice(`/data/${bucket}/`.length))
          .sort();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
