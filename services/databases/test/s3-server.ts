/**
 * A real S3-compatible server for tests: the local image pier/s3-test:1 (versitygw, built by
 * `deploy/images/build.sh s3-test`), HTTPS on a published port, with a certificate made at
 * its start, whose PEM the store is given as its CA. Labelled with the suite's labels, so
 * `./pier test` removes it even if a run dies before `stop`.
 */
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { docker, testLabels } from '@pier/testing';
import type { S3Store } from '../src/cluster/backup-store.ts';
import { S3Objects } from '../src/cluster/s3-objects.ts';

export const S3_TEST_IMAGE = 'pier/s3-test:1';

export interface S3Server {
  store: S3Store;
  /** A client of the bucket, to put objects where the operators would and to look. */
  objects: S3Objects;
  stop(): Promise<void>;
}

/** Runs `cmd` in the container; its standard output. */
async function execText(container: Docker.Container, cmd: string[]): Promise<string> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const out: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    docker.modem.demuxStream(stream, { write: (c: Buffer) => out.push(c) } as never, { write: () => undefined } as never);
    stream.on('end', () => resolve());
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`${cmd.join(' ')} exited ${ExitCode}`);
  return Buffer.concat(out).toString('utf8');
}

/**
 * `hostname`: the address clients reach the store at (default 127.0.0.1, this process only).
 * Containers (the databases' backup tools) need one of this machine's own addresses: the
 * store then listens on all of them, and its certificate names that one.
 */
export async function startS3Server(bucket = 'pier-backups', hostname = '127.0.0.1'): Promise<S3Server> {
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(18).toString('hex');
  const container = await docker.createContainer({
    Image: S3_TEST_IMAGE,
    Env: [`S3_ACCESS_KEY=${accessKeyId}`, `S3_SECRET_KEY=${secretAccessKey}`, `S3_BUCKETS=${bucket}`, `S3_HOSTNAME=${hostname}`],
    Labels: testLabels(),
    ExposedPorts: { '443/tcp': {} },
    HostConfig: { PortBindings: { '443/tcp': [{ HostIp: hostname === '127.0.0.1' ? hostname : '0.0.0.0', HostPort: '' }] }, AutoRemove: false },
  });
  const stop = () => container.remove({ force: true, v: true }).catch(() => undefined);
  try {
    await container.start();
    const port = Number((await container.inspect()).NetworkSettings.Ports['443/tcp']![0]!.HostPort);
    let caPem = '';
    let objects: S3Objects | undefined;
    for (let i = 0; ; i++) {
      try {
        // The certificate is made before the server starts; the server is up once a listing answers.
        caPem ||= await execText(container, ['cat', '/certs/cert.pem']);
        objects ??= new S3Objects({ host: hostname, port, bucket, region: 'us-east-1', accessKeyId, secretAccessKey, caPem, prefix: 'pier/databases' });
        await objects.list('');
        break;
      } catch (err) {
        if (i >= 100) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const store: S3Store = { host: hostname, port, bucket, region: 'us-east-1', accessKeyId, secretAccessKey, caPem, prefix: 'pier/databases' };
    return {
      store,
      objects: objects!,
      async stop() {
        objects?.close();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
