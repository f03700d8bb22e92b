import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';

/**
 * A unix-socket relay in front of the real Docker engine, so a test can take the cluster
 * away (`down`) and bring it back (`up`) under a running compute.
 */
export function dockerLink(target = '/var/run/docker.sock') {
  const socketPath = path.join(os.tmpdir(), `pier-docker-${randomBytes(4).toString('hex')}.sock`);
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  return {
    host: `unix://${socketPath}`,
    async up() {
      await rm(socketPath, { force: true });
      server = net.createServer((client) => {
        const upstream = net.connect(target);
        sockets.add(client).add(upstream);
        client.pipe(upstream).pipe(client);
        const drop = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
    },
    async down() {
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
      await rm(socketPath, { force: true });
    },
  };
}
