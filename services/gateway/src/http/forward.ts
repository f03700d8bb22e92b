import http from 'node:http';
import { errorBody, PierError, RECONNECT_EVENT, type Logger } from '@pier/kit';
import type { Upstream } from '../routing.ts';

/**
 * Request headers that are about the client's connection to the gateway, not the
 * request (RFC 9110 §7.6.1), or that the gateway answers or replaces itself. A client's
 * `Connection: close` must not close the pooled socket to the service; `Expect` was
 * answered by the gateway's own server (100 Continue); `Authorization` stops here; the
 * identity, request id and `X-Forwarded-*` fields are written by the gateway.
 */
const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'authorization',
  'x-pier-identity',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-pier-client-address',
]);

/**
 * Response headers not passed on: hop-by-hop fields (the gateway's server frames its own
 * answer — chunked or not, kept alive or not — from the client's connection), and
 * `X-Request-Id`, which the gateway already set to the same value.
 */
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade', 'x-request-id']);

/** Connection failures after which a request with no body is sent once more (Forwarder.forward). */
const RESEND_ON = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE']);
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** What the gateway adds to the forwarded request. */
export interface Forwarded {
  requestId: string;
  identity: string;
  /** The client's address as the gateway judged it (trusted proxy hops applied): events' `source_ip`. */
  clientAddress: string;
}

/**
 * The hot path's proxy: a plain HTTP request through the service's keep-alive pool, the
 * answer streamed back. It does what the gateway used http-proxy(-middleware) for on
 * plain requests, with less per request: one header array built in one pass over
 * `rawHeaders` (no copy of `req.headers`, no per-header validation of fields Node already
 * parsed), no per-request option objects, passes and events, and bodiless requests are
 * ended at once rather than piped. WebSocket upgrades stay with http-proxy-middleware
 * (see proxy.ts), which does that handshake dance well.
 *
 * Timeouts keep the gateway's promise (README, Faults): an idle timeout on the upstream
 * socket, 504 before the headers, the client's response cut after them, and none once an
 * event stream's headers arrived.
 */
export class Forwarder {
  private readonly agent: http.Agent;
  private readonly hostname: string;
  private readonly port: number;
  private readonly basePath: string;

  constructor(
    readonly name: Upstream,
    readonly target: string,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    agent: http.Agent,
    /** Aborted when the gateway stops (kit's drain.ts): event streams end with a `reconnect` event. */
    private readonly streamsEnd?: AbortSignal,
  ) {
    this.agent = agent;
    const url = new URL(target);
    if (url.protocol !== 'http:') throw new Error(`the ${name} service's URL must be http:, not ${url.protocol}`);
    this.hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port ? Number(url.port) : 80;
    this.basePath = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  }

  forward(req: http.IncomingMessage, res: http.ServerResponse, extra: Forwarded, again = false): void {
    const raw = req.rawHeaders;
    const headers: string[] = [];
    let forwardedFor = '';
    let forwardedHost = '';
    let host = '';
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      if (lower === 'host') host = raw[i + 1]!;
      if (!DROPPED_REQUEST_HEADERS.has(lower)) {
        headers.push(name, raw[i + 1]!);
        continue;
      }
      // A chain of proxies in front of the gateway: keep what they wrote, add our hop.
      if (lower === 'x-forwarded-for') forwardedFor = forwardedFor === '' ? raw[i + 1]! : `${forwardedFor},${raw[i + 1]!}`;
      else if (lower === 'x-forwarded-host' && forwardedHost === '') forwardedHost = raw[i + 1]!;
    }
    const peer = req.socket.remoteAddress ?? '';
    headers.push(
      'x-request-id',
      extra.requestId,
      'x-pier-identity',
      extra.identity,
      'x-forwarded-for',
      forwardedFor === '' ? peer : `${forwardedFor},${peer}`,
      'x-forwarded-proto',
      'http',
      'x-forwarded-port',
      portOf(host),
      'x-forwarded-host',
      forwardedHost || host,
      'x-pier-client-address',
      extra.clientAddress,
    );
    const method = req.method ?? 'GET';
    // (`Content-Length: 0`, as fetch sends on a POST with no body, is no body.)
    const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
    // As http-proxy did: some servers want an explicit empty body on these. Only when the
    // client gave no length: a second Content-Length is a malformed request upstream (400).
    if (req.headers['content-length'] === undefined && !hasBody && (method === 'DELETE' || method === 'OPTIONS')) headers.push('content-length', '0');

    const upstream = http.request({
      agent: this.agent,
      hostname: this.hostname,
      port: this.port,
      method,
      path: this.basePath + (req.url ?? '/'),
      headers,
    });
    let timedOut = false;
    upstream.setTimeout(this.timeoutMs, () => {
      timedOut = true;
      if (res.headersSent) res.destroy();
      upstream.destroy(new Error('upstream timeout'));
    });
    const failed = (err: Error) => {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      // The client went away first: nothing to answer.
      if (req.socket.destroyed && code === 'ECONNRESET') return;
      // No connection, or one closed before any answer (a pooled socket the service closed
      // as it stopped, a pod just gone): a request with no body that may safely run twice
      // (a read, or a write with an Idempotency-Key) is sent once more, on a new connection.
      if (!again && !hasBody && !timedOut && !res.headersSent && RESEND_ON.has(code) && (SAFE_METHODS.has(method) || req.headers['idempotency-key'])) {
        upstream.destroy();
        this.forward(req, res, extra, true);
        return;
      }
      this.logger.warn({ upstream: this.name, err: timedOut ? 'timeout' : code || err.message, requestId: extra.requestId }, 'upstream request failed');
      answerUpstreamFailure(res, this.name, this.timeoutMs, timedOut);
    };
    upstream.on('error', failed);
    // A client that goes away (mid-upload, mid-stream: log tails, SSE) must not leave the
    // upstream request open; after a complete answer this does nothing.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.on('response', (answer) => {
      if (answer.headers['content-type']?.startsWith('text/event-stream')) {
        answer.socket.setTimeout(0);
        if (this.streamsEnd) endWithInstance(answer, res, this.streamsEnd);
      }
      res.statusCode = answer.statusCode ?? 502;
      if (answer.statusMessage) res.statusMessage = answer.statusMessage;
      const got = answer.rawHeaders;
      for (let i = 0; i < got.length; i += 2) {
        if (!DROPPED_RESPONSE_HEADERS.has(got[i]!.toLowerCase())) res.appendHeader(got[i]!, got[i + 1]!);
      }
      answer.pipe(res);
    });
    if (hasBody) {
      req.on('error', failed);
      req.pipe(upstream);
    } else upstream.end();
  }
}

/** An event stream passing through a gateway that stops: cut from the service, ended with kit's `reconnect` event. */
function endWithInstance(answer: http.IncomingMessage, res: http.ServerResponse, streamsEnd: AbortSignal): void {
  const end = () => {
    answer.unpipe(res);
    answer.destroy();
    if (!res.writableEnded) res.end(RECONNECT_EVENT);
  };
  if (streamsEnd.aborted) return end();
  streamsEnd.addEventListener('abort', end, { once: true });
  res.once('close', () => streamsEnd.removeEventListener('abort', end));
}

function portOf(host: string): string {
  const colon = host.lastIndexOf(':');
  // An IPv6 literal without a port ends in ']'.
  return colon !== -1 && colon > host.lastIndexOf(']') ? host.slice(colon + 1) : '80';
}

/** A service's 503 `upstream_unavailable` error. */
export function upstreamUnavailable(name: Upstream): PierError {
  return new PierError('unavailable', `${name} service unavailable`, 'upstream_unavailable');
}

/**
 * Answers a request whose service failed: 504 `upstream_timeout` when it stayed silent for
 * `timeoutMs`, else 503 `upstream_unavailable`; a response already under way is cut
 * instead. The forwarder and the WebSocket proxy answer the same way.
 */
export function answerUpstreamFailure(res: http.ServerResponse, name: Upstream, timeoutMs: number, timedOut: boolean): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = timedOut ? 504 : 503;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(
    JSON.stringify(
      timedOut ? { error: `${name} service did not answer within ${timeoutMs} ms`, code: 'upstream_timeout' } : errorBody(upstreamUnavailable(name)),
    ),
  );
}
