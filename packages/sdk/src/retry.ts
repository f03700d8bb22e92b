// Retries that cannot do anything twice. Every write gets an `Idempotency-Key` (a new UUID
// per call, the same on each of its retries), so the API runs it at most once however often
// it is sent. Then a call is retried when the API says it ran nothing:
//   429 rate_limited          after `Retry-After` (any call; the gateway refused it)
//   409 idempotency_key_in_use after `Retry-After` (the first attempt is still running)
//   503                       after `Retry-After` or a backoff, reads and keyed writes
//   504                       after a backoff, reads and keyed writes (the service did not
//                             answer in time: a read may run again, and a keyed write's key
//                             makes its retry a replay, or a 409 while it still runs)
// and when the connection failed before an answer (reads and keyed writes). A wait longer
// than `maxDelayMs` is not waited: that answer is returned as it is.

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  retries?: number;
  /** Longest single wait; an answer asking for more is returned instead (default 30 s). */
  maxDelayMs?: number;
  /** Send a new `Idempotency-Key` with each write that has none (default true). */
  idempotencyKeys?: boolean;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const BACKOFF_MS = [500, 1000, 2000, 4000];

export function retryingFetch(base: typeof globalThis.fetch, options: RetryOptions = {}): typeof globalThis.fetch {
  const retries = options.retries ?? 3;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  return async (input, init) => {
    const original = new Request(input, init);
    const write = WRITES.has(original.method);
    if (write && options.idempotencyKeys !== false && !original.headers.has('idempotency-key')) {
      original.headers.set('idempotency-key', globalThis.crypto.randomUUID());
    }
    const safe = !write || original.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      // Each attempt sends a copy: a body can be read once.
      const request = attempt < retries ? original.clone() : original;
      let response: Response;
      try {
        response = await base(request);
      } catch (err) {
        if (!safe || attempt >= retries || original.signal.aborted) throw err;
        await sleep(backoff(attempt), original.signal);
        continue;
      }
      const wait = attempt < retries ? delayOf(response, attempt, safe) : undefined;
      if (wait === undefined || wait > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(wait, original.signal);
    }
  };
}

/** How long to wait before retrying this answer, or undefined when it is final. */
function delayOf(response: Response, attempt: number, safe: boolean): number | undefined {
  const after = retryAfterMs(response.headers.get('retry-after'));
  if (response.status === 429) return after ?? backoff(attempt);
  if (response.status === 409 && after !== undefined && safe) return after;
  if (response.status === 503 && safe) return after ?? backoff(attempt);
  if (response.status === 504 && safe) return backoff(attempt);
  return undefined;
}

function backoff(attempt: number): number {
  const base = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
  return base / 2 + Math.random() * base;
}

/** `Retry-After` in seconds or as an HTTP date. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
