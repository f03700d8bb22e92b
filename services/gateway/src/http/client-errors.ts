import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { writeSocketError } from '@pier/kit';

/** Request line plus headers the gateway reads (Node's default); more is a 431. */
export const GATEWAY_MAX_HEADER_BYTES = 16 * 1024;

/** How long a refused client may go on sending what we will not read before the socket is closed. */
const LINGER_MS = 2000;

/** Node's own answer to each parser error, as JSON like every other error of the API. */
function answerTo(err: NodeJS.ErrnoException): { status: number; error: string; code: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, error: `request line and headers over ${GATEWAY_MAX_HEADER_BYTES} bytes`, code: 'headers_too_large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, error: 'chunk extensions too large', code: 'payload_too_large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, error: 'the request did not arrive in time', code: 'request_timeout' };
    default:
      return { status: 400, error: 'malformed HTTP request', code: 'bad_request' };
  }
}

const answered = new WeakSet<Duplex>();

/**
 * The server's 'clientError' listener: a request Node cannot parse (a URL or headers over
 * the limit, say) is answered with the JSON error body, and then what the client still
 * sends is read and dropped for a moment before the socket closes. Node's default writes
 * its answer and destroys the socket at once; with the rest of a long request still unread,
 * the kernel then resets the connection and the client often loses the answer.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // The parser keeps being fed what arrives, and fails again on each chunk: answered once.
  if (answered.has(socket)) return;
  // A response already under way on this connection (keep-alive) must not be corrupted.
  const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  answered.add(socket);
  const { status, error, code } = answerTo(err);
  writeSocketError(socket, status, { error, code }, randomUUID());
  socket.on('error', () => undefined);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
