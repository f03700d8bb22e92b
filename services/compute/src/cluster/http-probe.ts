// One HTTP(S) GET as a user's browser would make it, for uptime checks: the URL says what
// is asked for (Host header, TLS SNI and the name the certificate must carry), `connectTo`
// says where the TCP connection goes (the edge that routes by Host/SNI). Node's http/https,
// not the global fetch: fetch ignores per-request agents and cannot pin the connection to
// another address than the URL's.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

export interface ProbeOptions {
  /** Where to connect instead of the URL's own host and port. */
  connectTo?: { host: string; port: number };
  /** PEM of a CA trusted besides the system's (an edge with a private CA). */
  ca?: string;
  /** Whole-request deadline: connection, TLS handshake and the response's headers. */
  timeoutMs: number;
  /** Aborting it ends the request at once (compute stopping). */
  signal?: AbortSignal;
}

export type ProbeResult = { statusCode: number; latencyMs: number } | { error: string; latencyMs: number };

/** Body bytes read before the connection is dropped: a server gets to write a little, never a download. */
const BODY_READ_LIMIT = 16 * 1024;
const USER_AGENT = 'pier-uptime/1';

const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'EPROTO',
]);

/** A failure in the words an incident shows. */
function reasonOf(err: NodeJS.ErrnoException, timeoutMs: number): string {
  // An abort's reason is a DOMException, whose `code` is a number.
  const code = typeof err.code === 'string' ? err.code : '';
  if (err.name === 'TimeoutError' || code === 'ETIMEDOUT') return `timed out after ${timeoutMs / 1000} s`;
  if (err.name === 'AbortError' || code === 'ABORT_ERR') return 'stopped';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `name not resolved (${err.message.replace(/^getaddrinfo \S+ /, '')})`;
  if (TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return `TLS: ${err.message}`;
  if (code.startsWith('HPE_')) return `invalid HTTP response (${err.message})`;
  return err.message || code || 'request failed';
}

/**
 * GETs `url` once and reports the status code, or why there is none. Redirects are never
 * followed (a 3xx is the answer, judged by the caller); no connection is pooled or reused;
 * the body is drained up to a few KiB and dropped. Never throws.
 */
export function probe(url: string, opts: ProbeOptions): Promise<ProbeResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ error: `not a URL: ${url}`, latencyMs: 0 });
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.resolve({ error: `not an http(s) URL: ${url}`, latencyMs: 0 });
  if (target.username || target.password) return Promise.resolve({ error: 'the URL carries credentials', latencyMs: 0 });

  const secure = target.protocol === 'https:';
  // URL keeps the brackets of an IPv6 literal; sockets and SNI want the bare address.
  const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1');
  // One controller per request, released when it closes: AbortSignal.any on the caller's
  // process-long signal would tie a listener to it for every check ever made.
  const controller = new AbortController();
  const { signal } = controller;
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${opts.timeoutMs} ms`, 'TimeoutError')), opts.timeoutMs);
  const stop = () => controller.abort(opts.signal?.reason);
  if (opts.signal?.aborted) stop();
  else opts.signal?.addEventListener('abort', stop, { once: true });
  const release = () => {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', stop);
  };
  const options: https.RequestOptions = {
    method: 'GET',
    host: opts.connectTo?.host ?? hostname,
    port: opts.connectTo?.port ?? (target.port ? Number(target.port) : secure ? 443 : 80),
    path: `${target.pathname}${target.search}`,
    headers: { host: target.host, 'user-agent': USER_AGENT, accept: '*/*', connection: 'close' },
    // A fresh connection per check: a pooled socket would hide a broken handshake or a dead edge.
    agent: false,
    signal,
  };
  if (secure) {
    // SNI and the certificate's name come from the URL even when the socket goes elsewhere
    // (RFC 6066 forbids an IP address as SNI: then only the certificate check uses it).
    if (!net.isIP(hostname)) options.servername = hostname;
    options.checkServerIdentity = (_host, cert) => tls.checkServerIdentity(hostname, cert);
    if (opts.ca) options.ca = [...tls.rootCertificates, opts.ca];
  }

  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    let req: http.ClientRequest;
    try {
      req = (secure ? https : http).request(options, (res) => {
        finish({ statusCode: res.statusCode ?? 0, latencyMs: elapsed() });
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= BODY_READ_LIMIT) res.destroy();
        });
        res.on('error', () => undefined);
        res.on('end', () => req.destroy());
      });
    } catch (err) {
      // What node refuses before sending (a path with characters a request line cannot hold).
      release();
      finish({ error: `request refused: ${err instanceof Error ? err.message : String(err)}`, latencyMs: elapsed() });
      return;
    }
    req.on('close', release);
    req.on('error', (err) => {
      const reason = signal.aborted ? (signal.reason as NodeJS.ErrnoException) : err;
      finish({ error: reasonOf(reason ?? err, opts.timeoutMs), latencyMs: elapsed() });
    });
    req.end();
  });
}
