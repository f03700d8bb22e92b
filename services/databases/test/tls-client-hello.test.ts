// The server name the PostgreSQL listener routes by, read from real ClientHellos (Node's
// TLS client, OpenSSL's as libpq's is), the names it accepts, and what it does with bytes
// an attacker sends before any name.
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { readClientHello } from '../src/edge/tls-client-hello.ts';
import { databaseOfServerName, fatalError, PostgresListener } from '../src/edge/postgres-listener.ts';

/** The first bytes a TLS client sends, as a server would receive them. */
async function clientHello(servername: string | undefined): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const received = new Promise<Buffer>((resolve) =>
    server.once('connection', (s) => {
      let bytes = Buffer.alloc(0);
      s.on('data', (chunk: Buffer) => {
        bytes = Buffer.concat([bytes, chunk]);
        if (readClientHello(bytes).kind !== 'partial') resolve(bytes);
      });
    }),
  );
  const client = tls.connect({ host: '127.0.0.1', port, ...(servername ? { servername } : {}), rejectUnauthorized: false });
  client.on('error', () => undefined);
  const bytes = await received;
  client.destroy();
  server.close();
  return bytes;
}

describe('readClientHello', () => {
  it('reads the server name of a real ClientHello, lowercased', async () => {
    const hello = await clientHello('AbCdEf12-Ro.PG.Example.Test');
    expect(readClientHello(hello)).toEqual({ kind: 'hello', serverName: 'abcdef12-ro.pg.example.test' });
  });

  it('asks for more bytes until the ClientHello is whole, at every cut', async () => {
    const hello = await clientHello('abcdef12.pg.example.test');
    for (let cut = 0; cut < hello.length; cut += 7) expect(readClientHello(hello.subarray(0, cut)).kind).toBe('partial');
  });

  it('reads a ClientHello split over several TLS records', async () => {
    const hello = await clientHello('abcdef12.pg.example.test');
    const body = hello.subarray(5, 5 + hello.readUInt16BE(3));
    const record = (part: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, part.length >> 8, part.length & 0xff]), part]);
    const split = Buffer.concat([record(body.subarray(0, 3)), record(body.subarray(3, 100)), record(body.subarray(100))]);
    expect(readClientHello(split)).toEqual({ kind: 'hello', serverName: 'abcdef12.pg.example.test' });
  });

  it('says when a client sends no name', async () => {
    expect(readClientHello(await clientHello(undefined))).toEqual({ kind: 'hello', serverName: null });
  });

  it('refuses what is not a ClientHello, or a truncated body', async () => {
    expect(readClientHello(Buffer.from('GET / HTTP/1.1\r\n\r\n'))).toMatchObject({ kind: 'invalid' });
    expect(readClientHello(Buffer.from([0x16, 3, 1, 0, 4, 0x02, 0, 0, 0]))).toMatchObject({ kind: 'invalid', why: 'not a ClientHello' });
    // A ClientHello claiming a session id longer than its body.
    expect(readClientHello(Buffer.from([0x16, 3, 1, 0, 40, 0x01, 0, 0, 36, 3, 3, ...Array(32).fill(0), 200, 0, 0, 0]))).toMatchObject({
      kind: 'invalid',
    });
  });
});

describe('the names the listener routes', () => {
  it('maps <short_id>[-ro].<domain> to a database, and nothing else', () => {
    expect(databaseOfServerName('abcdef12.pg.example.test', 'pg.example.test')).toEqual({ shortId: 'abcdef12', readOnly: false });
    expect(databaseOfServerName('abcdef12-ro.pg.example.test', 'PG.example.test')).toEqual({ shortId: 'abcdef12', readOnly: true });
    for (const name of [
      'abcdef12.other.test',
      'x.abcdef12.pg.example.test',
      'abcdef1.pg.example.test',
      'abcdefgh.pg.example.test',
      'pg.example.test',
      'abcdef12-rw.pg.example.test',
    ]) {
      expect(databaseOfServerName(name, 'pg.example.test'), name).toBeNull();
    }
  });

  it('tells a client speaking plain PostgreSQL why, as a FATAL ErrorResponse', () => {
    const e = fatalError('28000', 'use TLS');
    expect(e.subarray(0, 1).toString()).toBe('E');
    expect(e.readInt32BE(1)).toBe(e.length - 1);
    expect(e.subarray(5).toString('latin1')).toBe('SFATAL\0VFATAL\0C28000\0Muse TLS\0\0');
  });
});

describe('the listener before TLS, as an attacker speaks to it', () => {
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined } as never;

  it('answers one GSSENCRequest, and closes on a flood of them without overflowing its stack', async () => {
    const routed: string[] = [];
    const listener = new PostgresListener({ domain: 'pg.example.test', logger: quiet, route: async (id) => (routed.push(id), { refused: 'no' }) });
    const port = await listener.listen('127.0.0.1', 0);
    const errors: unknown[] = [];
    const onError = (err: unknown) => errors.push(err);
    process.on('uncaughtException', onError);
    try {
      const gssenc = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]);
      const socket = net.connect(port, '127.0.0.1');
      const answer: Buffer[] = [];
      socket.on('data', (b: Buffer) => answer.push(b));
      const closed = new Promise<void>((r) => socket.on('close', () => r()));
      socket.on('error', () => undefined);
      socket.write(Buffer.concat(Array.from({ length: 20_000 }, () => gssenc)));
      await closed;
      // One "N" (no GSSAPI encryption), then the connection is ended: nothing else asked of it.
      expect(Buffer.concat(answer).subarray(0, 1).toString()).toBe('N');
      expect(errors).toEqual([]);
      expect(routed).toEqual([]);
    } finally {
      process.off('uncaughtException', onError);
      await listener.close();
    }
  });
});
