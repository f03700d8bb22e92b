// The server name (SNI) a TLS ClientHello asks for, read from the bytes a client sent
// before any answer: what the PostgreSQL listener (postgres-listener.ts) routes by
// without taking part in TLS. RFC 8446 §4.1.2 (ClientHello) and RFC 6066 §3 (server_name).

/** A ClientHello too large for this (TLS allows 2^24, real ones are a few KiB) is refused. */
export const MAX_CLIENT_HELLO = 64 * 1024;

export type ClientHelloRead =
  /** More bytes are needed. */
  | { kind: 'partial' }
  /** The whole ClientHello: the host name it asks for (lowercase), or null when it sends none. */
  | { kind: 'hello'; serverName: string | null }
  | { kind: 'invalid'; why: string };

const HANDSHAKE_RECORD = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME_EXTENSION = 0x0000;
const HOST_NAME = 0x00;

/** Reads `bytes` (the start of a TLS stream) as far as the ClientHello goes. */
export function readClientHello(bytes: Buffer): ClientHelloRead {
  // The handshake message may span several records: gather their payloads.
  const parts: Buffer[] = [];
  let at = 0;
  let gathered = 0;
  let needed: number | null = null;
  while (needed === null || gathered < needed) {
    if (bytes.length < at + 5) return { kind: 'partial' };
    if (bytes[at] !== HANDSHAKE_RECORD) return { kind: 'invalid', why: 'not a TLS handshake record' };
    const length = bytes.readUInt16BE(at + 3);
    if (bytes.length < at + 5 + length) return bytes.length > MAX_CLIENT_HELLO ? { kind: 'invalid', why: 'too large' } : { kind: 'partial' };
    parts.push(bytes.subarray(at + 5, at + 5 + length));
    gathered += length;
    at += 5 + length;
    if (needed === null && gathered >= 4) {
      const head = Buffer.concat(parts);
      if (head[0] !== CLIENT_HELLO) return { kind: 'invalid', why: 'not a ClientHello' };
      needed = 4 + head.readUIntBE(1, 3);
      if (needed > MAX_CLIENT_HELLO) return { kind: 'invalid', why: 'too large' };
    }
  }
  try {
    return { kind: 'hello', serverName: serverNameOf(Buffer.concat(parts).subarray(4, needed)) };
  } catch {
    return { kind: 'invalid', why: 'a malformed ClientHello' };
  }
}

/** The host_name of the server_name extension of a ClientHello body; throws past its end. */
function serverNameOf(body: Buffer): string | null {
  let at = 0;
  const take = (n: number): Buffer => {
    if (at + n > body.length) throw new RangeError('past the end');
    const part = body.subarray(at, at + n);
    at += n;
    return part;
  };
  take(2 + 32); // legacy_version, random
  take(take(1)[0]!); // legacy_session_id
  take(take(2).readUInt16BE(0)); // cipher_suites
  take(take(1)[0]!); // legacy_compression_methods
  if (at === body.length) return null; // no extensions
  const extensionsLength = take(2).readUInt16BE(0);
  const end = Math.min(at + extensionsLength, body.length);
  while (at < end) {
    const type = take(2).readUInt16BE(0);
    const data = take(take(2).readUInt16BE(0));
    if (type !== SERVER_NAME_EXTENSION) continue;
    let i = 2; // server_name_list length
    while (i + 3 <= data.length) {
      const nameType = data[i]!;
      const length = data.readUInt16BE(i + 1);
      const name = data.subarray(i + 3, i + 3 + length);
      if (name.length !== length) throw new RangeError('past the end');
      if (nameType === HOST_NAME) return name.toString('ascii').toLowerCase();
      i += 3 + length;
    }
    return null;
  }
  return null;
}
