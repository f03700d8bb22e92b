import http from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

export interface LoadBounds {
  /** Requests in flight at any time. */
  concurrency: number;
  /** Stop after this many requests... */
  maxRequests: number;
  /** ...or after this long, whichever comes first. */
  maxSeconds: number;
  /** ...or once this says so (a run that lasts as long as something else does). */
  stop?: () => boolean;
}

/** One request; resolves true when it succeeded. Never rejects. */
export type Send = () => Promise<boolean>;

/**
 * A closed loop: `concurrency` workers, each sending its next request as soon as the
 * previous one answered, until the count or the time is used up.
 */
export async function runClosedLoop(send: Send, bounds: LoadBounds): Promise<LoadResult> {
  const latencies = new Float64Array(bounds.maxRequests);
  let sent = 0;
  let done = 0;
  let errors = 0;
  const start = performance.now();
  const deadline = start + bounds.maxSeconds * 1000;
  const worker = async () => {
    while (sent < bounds.maxRequests && performance.now() < deadline && !bounds.stop?.()) {
      sent++;
      const t0 = performance.now();
      const ok = await send();
      latencies[done++] = performance.now() - t0;
      if (!ok) errors++;
    }
  };
  await Promise.all(Array.from({ length: bounds.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  const sorted = latencies.slice(0, done).sort();
  const pct = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { requests: done, errors, seconds, rps: done / seconds, p50: pct(0.5), p99: pct(0.99) };
}

/**
 * GET `url` over keep-alive connections on loopback, 200 counting as success. Plain
 * node:http (not fetch) so the client spends as little of the shared CPU as it can.
 */
export async function runLoad(opts: LoadBounds & { url: string; headers: Record<string, string> }): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const target = new URL(opts.url);
  const request = { host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'GET', headers: opts.headers, agent };
  const send: Send = () =>
    new Promise((resolve) => {
      const req = http.request(request, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
      });
      req.on('error', () => resolve(false));
      req.end();
    });
  try {
    return await runClosedLoop(send, opts);
  } finally {
    agent.destroy();
  }
}
