import type http from 'node:http';
import type { Logger } from './logger.ts';

// A graceful stop (SIGTERM), as a rolling upgrade or a drained node asks of a pod:
//   1. leave: GET /readyz answers 503 `draining`, so the Service's endpoints drop this
//      instance, and every answer closes its connection (`Connection: close`), so clients
//      and the gateway's pools open their next one to another instance. Requests keep
//      being served normally for `delayMs`, the time endpoints and kube-proxy take to catch
//      up (a request routed here meanwhile still gets its answer);
//   2. end the long-lived: event streams get a last `reconnect` event and end, WebSockets
//      close with RECONNECT_CLOSE_CODE; a client reconnects, and lands elsewhere;
//   3. close: no new connection is taken, idle ones close, requests in flight finish
//      (at most `graceMs`, then their connections are cut).
// What follows (background loops handing leadership over, pools closing) is the
// Lifecycle's next steps.

/** The WebSocket close code of an instance that stops: RFC 6455's 1012, "Service Restart". Reconnect. */
export const RECONNECT_CLOSE_CODE = 1012;
export const RECONNECT_CLOSE_REASON = 'the service is restarting: reconnect';
/** The last event of a stream an instance ends as it stops (a client reconnects, resuming where it was). */
export const RECONNECT_EVENT = `event: reconnect\ndata: ${JSON.stringify({ error: 'the service is restarting: reconnect', code: 'service_restarting' })}\n\n`;

export interface DrainTimes {
  /** Step 1's length: how long an instance keeps serving after it fails readiness (PIER_SHUTDOWN_DELAY_MS). */
  delayMs: number;
  /** Step 3's bound: how long requests in flight may take to finish (PIER_SHUTDOWN_GRACE_MS). */
  graceMs: number;
}

export class Drain {
  private readonly leaving = new AbortController();
  private readonly ending = new AbortController();

  /** True from step 1: readiness fails and answers close their connections. */
  get draining(): boolean {
    return this.leaving.signal.aborted;
  }

  /** Aborted at step 2: what holds a stream or a socket open ends it, telling its client to reconnect. */
  get streamsEnd(): AbortSignal {
    return this.ending.signal;
  }

  /** Steps 1 to 3 for `server`; `endStreams` ends what the server's routes keep open beyond the signal (WebSockets). */
  async run(server: http.Server, times: DrainTimes, log: Logger, endStreams?: () => void): Promise<void> {
    if (this.draining) return;
    this.leaving.abort();
    log.info({ delayMs: times.delayMs, graceMs: times.graceMs }, 'draining: leaving the endpoints');
    if (times.delayMs > 0) await new Promise((r) => setTimeout(r, times.delayMs));
    this.ending.abort();
    endStreams?.();
    await closeGracefully(server, times.graceMs);
  }
}

/** Express middleware: while draining, each answer closes its connection. */
export function closeWhileDraining(drain: Drain) {
  return (_req: unknown, res: http.ServerResponse, next: () => void) => {
    if (drain.draining) res.setHeader('connection', 'close');
    next();
  };
}

/**
 * Stops taking connections, closes the idle ones, waits for requests in flight up to
 * `graceMs`, then cuts what is left. (kit's `close` cuts everything at once: tests and
 * failed starts, where nothing is in flight that matters.)
 */
export function closeGracefully(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}
