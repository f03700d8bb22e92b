// The one limit on a request's line and headers is the gateway's (16 KB): whatever it takes
// reaches the service even though it forwards an identity token too, and what it refuses is
// a JSON 431 the client reads whole (`pnpm fuzz` found both a relayed bodiless 431 from the
// service and a reset connection).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Platform } from '../support/platform.ts';

let p: Platform;
let path: string;

beforeAll(async () => {
  p = await startPlatform();
  path = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/secrets`;
});

afterAll(async () => {
  await p?.stop();
});

/** A GET of `path?q=<n × a>` over a raw socket; the whole answer, and the socket error if any. */
function getWithQuery(n: number): Promise<{ status: number; text: string; error?: string }> {
  const { port } = new URL(p.gatewayUrl);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    const done = (error?: string) => resolve({ status: Number(text.slice(9, 12)), text, error });
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', (err: NodeJS.ErrnoException) => done(err.code));
    socket.on('close', () => done());
    socket.write(`GET ${path}?q=${'a'.repeat(n)} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${p.bootstrap.token}\r\nconnection: close\r\n\r\n`);
  });
}

describe('request line and headers', () => {
  it('a request just under the gateway limit reaches the service', async () => {
    // The request line and these headers take some 300 bytes besides the query.
    const res = await getWithQuery(16 * 1024 - 600);
    expect(res.status).toBe(200);
  });

  it('over it, a JSON 431 from the gateway, read whole', async () => {
    for (const n of [16 * 1024, 1 << 20]) {
      const res = await getWithQuery(n);
      expect(res.error).toBeUndefined();
      expect(res.status).toBe(431);
      expect(JSON.parse(res.text.slice(res.text.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'headers_too_large' });
    }
  });
});
