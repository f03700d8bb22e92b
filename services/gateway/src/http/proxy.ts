import http from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware, type Plugin, type RequestHandler } from 'http-proxy-middleware';
import { errorBody, writeSocketError, type Logger } from '@pier/kit';
import type { Upstream } from '../routing.ts';
import { answerUpstreamFailure, Forwarder, upstreamUnavailable } from './forward.ts';

/** Set on an upgrade request by the gateway: told once the status the client got. */
export const UPGRADE_DONE = Symbol('pier.upgradeDone');
export type UpgradeRequest = http.IncomingMessage & {
  /** `headers` are added to the upstream's answer to the handshake (the RateLimit-* fields). */
  [UPGRADE_DONE]?: { answered: boolean; done(status: number): void; headers?: readonly (readonly [string, string])[] };
};

/** Set on a request whose upstream went silent for longer than the timeout. */
const TIMED_OUT = Symbol('pier.upstreamTimedOut');
type TimedRequest = http.IncomingMessage & { [TIMED_OUT]?: true };

export interface UpstreamProxy {
  name: Upstream;
  target: string;
  /** WebSocket upgrades (http-proxy-middleware). */
  handle: RequestHandler<http.IncomingMessage, http.ServerResponse>;
  /** Plain HTTP requests, the hot path (forward.ts), on the same socket pool. */
  forwarder: Forwarder;
  agent: http.Agent;
}

/**
 * One proxy per upstream service: plain requests go through its Forwarder, upgrades
 * through http-proxy-middleware, both on one keep-alive pool. For upgrades, the identity, request id and the removal of the
 * Authorization header are done on `req.headers` before proxying (http-proxy copies
 * them), so no per-request proxy event listener is needed. The default plugins of
 * http-proxy-middleware are ejected: they attach listeners to every request and log URLs
 * with their query strings, which may hold an `access_token`.
 */
/** How long an upstream socket waits unused in the pool before it is closed. */
export const UPSTREAM_IDLE_MS = 4_000;

export function createUpstreamProxy(name: Upstream, target: string, logger: Logger, timeoutMs: number, streamsEnd?: AbortSignal): UpstreamProxy {
  // Keep-alive, and let idle sockets go after 4 s: before the services' keep-alive timeout
  // (65 s), so we never reuse a socket the other side is closing, and before a Service's
  // endpoints drop a pod that went away (seconds), so no request is sent on a socket to a
  // pod that is gone (one waited the whole upstream timeout on such a socket after an upgrade).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: UPSTREAM_IDLE_MS, scheduling: 'lifo' });
  const errors: Plugin<http.IncomingMessage, http.ServerResponse> = (proxy) => {
    // The upstream must send something at least every timeoutMs (an idle timeout on its
    // socket, as nginx's proxy_read_timeout): silent before its headers is a 504, silent
    // after them ends the client's response. Only plain HTTP: WebSocket upgrades never get
    // here ('proxyReqWs'), and an event stream clears it on its headers (below).
    proxy.on('proxyReq', (proxyReq, req, res) => {
      proxyReq.setTimeout(timeoutMs, () => {
        (req as TimedRequest)[TIMED_OUT] = true;
        // After the headers the error handler is not told (the response already came):
        // end the client's connection here so it sees the cut instead of waiting.
        if (res.headersSent) res.destroy();
        proxyReq.destroy(new Error('upstream timeout'));
      });
    });
    proxy.on('error', (err, req, res) => {
      const timedOut = (req as TimedRequest)[TIMED_OUT] === true;
      logger.warn(
        { upstream: name, err: timedOut ? 'timeout' : ((err as NodeJS.ErrnoException).code ?? err.message), requestId: req.headers['x-request-id'] },
        'upstream request failed',
      );
      if (res instanceof http.ServerResponse) {
        answerUpstreamFailure(res, name, timeoutMs, timedOut);
      } else {
        const hook = (req as UpgradeRequest)[UPGRADE_DONE];
        // After the handshake was answered the socket carries WebSocket frames: just close it.
        if (hook?.answered) {
          (res as Socket).destroy();
          return;
        }
        writeSocketError(res as Socket, 503, errorBody(upstreamUnavailable(name)), String(req.headers['x-request-id'] ?? ''));
        if (hook) {
          hook.answered = true;
          hook.done(503);
        }
      }
    });
    // A client that goes away mid-stream (log tails, SSE) must not leave the upstream
    // response open.
    proxy.on('proxyRes', (proxyRes, _req, res) => {
      if (proxyRes.headers['content-length'] !== undefined) return;
      // Server-sent events (log and build follows) are long-lived by design, with their
      // own keep-alive comments: no idle timeout once the stream has started.
      if (proxyRes.headers['content-type']?.startsWith('text/event-stream')) proxyRes.socket.setTimeout(0);
      res.once('close', () => {
        if (!res.writableEnded) proxyRes.destroy();
      });
    });
    // WebSocket sockets on either side may reset; never let that crash the gateway. The
    // upstream's answer to the handshake gets our request id and goes to the access log.
    proxy.on('proxyReqWs', (proxyReq, req, socket) => {
      socket.on('error', () => undefined);
      const requestId = req.headers['x-request-id'];
      const hook = (req as UpgradeRequest)[UPGRADE_DONE];
      const answered = (res: http.IncomingMessage) => {
        if (typeof requestId === 'string') res.headers['x-request-id'] ??= requestId;
        for (const [name, value] of hook?.headers ?? []) res.headers[name.toLowerCase()] ??= value;
        if (hook) {
          hook.answered = true;
          hook.done(res.statusCode ?? 101);
        }
      };
      proxyReq.on('upgrade', answered);
      proxyReq.on('response', answered);
    });
    proxy.on('open', (proxySocket) => {
      proxySocket.on('error', () => undefined);
    });
  };
  // A parsed target: http-proxy would otherwise parse the URL string on every request.
  const url = new URL(target);
  const parsedTarget = { protocol: url.protocol, host: url.host, hostname: url.hostname, port: url.port, path: url.pathname };
  const handle = createProxyMiddleware<http.IncomingMessage, http.ServerResponse>({
    target: parsedTarget,
    agent,
    xfwd: true,
    ejectPlugins: true,
    plugins: [errors],
  });
  return { name, target, handle, forwarder: new Forwarder(name, target, logger, timeoutMs, agent, streamsEnd), agent };
}
