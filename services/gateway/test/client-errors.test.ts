// The gateway's answer to requests Node cannot parse: JSON like every other error, and
// read to the end before the socket closes, so a client still sending a long URL gets the
// answer instead of a connection reset (found by `pnpm fuzz`).
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerClientError, GATEWAY_MAX_HEADER_BYTES } from '../src/http/client-errors.ts';

let server: http.Server;
let port: number;

beforeAll(async () => {
  server = http.createServer({ maxHeaderSize: GATEWAY_MAX_HEADER_BYTES }, (_req, res) => res.end('ok'));
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Sends `raw` and reads until the server closes; `error` is the socket error, if any. */
function exchange(raw: string): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ text, error: err.code }));
    socket.on('close', () => resolve({ text }));
    socket.write(raw, () => socket.end());
  });
}

describe('requests Node cannot parse', () => {
  it('answers a URL over the limit with a JSON 431, without resetting the connection', async () => {
    // Megabytes: far more than the kernel buffers, so the client is still writing when we answer.
    const url = `/api/v1/x?command=${'a'.repeat(4 << 20)}`;
    const { text, error } = await exchange(`GET ${url} HTTP/1.1\r\nhost: x\r\n\r\n`);
    expect(error).toBeUndefined();
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    expect(text).toMatch(/content-type: application\/json/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ error: expect.any(String), code: 'headers_too_large' });
  });

  it('answers a malformed request with a JSON 400', async () => {
    const { text } = await exchange('NOT HTTP AT ALL\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'bad_request' });
  });

  it('still serves a request under the limit', async () => {
    const { text } = await exchange(`GET /?q=${'a'.repeat(1000)} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
  });
});
