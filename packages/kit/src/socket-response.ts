import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Answers a WebSocket handshake that we refuse (the gateway's, a service's upgrade route)
 * on the raw socket — there is no ServerResponse for an upgrade — with the same JSON
 * error body as any other response. `headers` are extra fields (the gateway's RateLimit-*).
 */
export function writeSocketError(socket: Duplex, status: number, body: unknown, requestId: string, headers?: readonly (readonly [string, string])[]): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(json)}\r\n` +
      (requestId ? `x-request-id: ${requestId}\r\n` : '') +
      (headers ? headers.map(([name, value]) => `${name}: ${value}\r\n`).join('') : '') +
      'connection: close\r\n\r\n' +
      json,
  );
}
