import { UnavailableError } from './errors.ts';

// What a failed call to a cluster (the Docker Engine API through dockerode, the Kubernetes
// API through @kubernetes/client-node) or to the platform database means, read once here:
// out of reach, the cluster failing on its side, or the cluster refusing what was asked.
// Each service then says it in its own words (compute's rejected workload, the databases'
// 503): what differs between them is the sentence, not the reading. Errors are read by their
// shape, not their class, so kit needs neither client at run time.

/** Node's socket and DNS errors: the peer (an engine, an API server, PostgreSQL) is out of reach. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

interface NodeSocketError {
  code?: unknown;
  syscall?: unknown;
  cause?: { code?: unknown; syscall?: unknown };
}

function socketCode(e: { code?: unknown; syscall?: unknown } | undefined): string | undefined {
  if (typeof e?.code !== 'string') return undefined;
  // A unix socket that is missing (ENOENT) or closed to us (EACCES) is an engine out of reach
  // too, but only when connecting: the same codes from a file read mean something else.
  if (UNREACHABLE_CODES.has(e.code) || (e.syscall === 'connect' && (e.code === 'ENOENT' || e.code === 'EACCES'))) return e.code;
  return undefined;
}

/** The socket error code of a failure to reach a peer (its own, or its cause's as fetch gives it); undefined when it is something else. */
export function unreachableCode(err: unknown): string | undefined {
  const e = err as NodeSocketError | undefined;
  return socketCode(e) ?? socketCode(e?.cause);
}

/** What a failed cluster call means, whichever cluster it was. */
export type ClusterFault =
  /**
   * Out of reach, or no answer in time: retry later. `code` is the socket error, or `timeout`;
   * `detail` the socket error, or the client's message when there is no code.
   */
  | { kind: 'unreachable'; code: string; detail: string }
  /** The cluster answered that it cannot do it on its side (a 5xx; for Kubernetes also 429). */
  | { kind: 'failed'; status: number; reason: string }
  /** The cluster has run out of something the request needs (Docker: every address pool is taken). */
  | { kind: 'exhausted'; status: number; reason: string }
  /** The cluster refused the request itself (a 4xx: missing, conflicting, forbidden, invalid). */
  | { kind: 'refused'; status: number; reason: string };

// ---- Docker (dockerode: `statusCode`, `json.message`, `reason`; socket errors carry `code`)

interface DockerodeError {
  statusCode?: unknown;
  json?: { message?: unknown } | null;
  reason?: unknown;
  message?: unknown;
}

/** The HTTP status the Engine API answered, when it answered. */
export function dockerStatusOf(err: unknown): number | undefined {
  const status = (err as DockerodeError | undefined)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The engine's own words (its JSON `message`), else dockerode's. */
export function dockerReasonOf(err: unknown): string {
  const e = err as DockerodeError | undefined;
  const words = e?.json?.message ?? e?.reason ?? e?.message;
  return typeof words === 'string' ? words : String(err);
}

/** The engine answered 404: the container, volume, network or image is not there. */
export function isDockerNotFound(err: unknown): boolean {
  return dockerStatusOf(err) === 404;
}

/**
 * The engine answers a network create it can give no subnet with a 404 ("could not find an
 * available, non-overlapping IPv4 address pool among the defaults to assign to the
 * network"): not a missing object but an engine that has used up its address pools.
 */
const POOLS_EXHAUSTED = /could not find an available, non-overlapping IPv[46] address pool/i;

/** A Docker Engine API failure read; undefined when it is none (a bug of ours, say). */
export function dockerFault(err: unknown): ClusterFault | undefined {
  const code = unreachableCode(err);
  if (code) return { kind: 'unreachable', code, detail: code };
  // docker-modem's own deadline (the client's `timeout`) is an Error('timeout').
  const message = (err as DockerodeError | undefined)?.message;
  if (typeof message === 'string' && message.includes('timeout')) return { kind: 'unreachable', code: 'timeout', detail: message };
  const status = dockerStatusOf(err);
  if (status === undefined) return undefined;
  const reason = dockerReasonOf(err);
  if (POOLS_EXHAUSTED.test(reason)) return { kind: 'exhausted', status, reason };
  return status >= 500 ? { kind: 'failed', status, reason } : { kind: 'refused', status, reason };
}

// ---- Kubernetes (@kubernetes/client-node's ApiException: numeric `code`, `body` the Status)

/** The HTTP status the API server answered (ApiException's `code`), when it answered. */
export function kubernetesStatusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The API server's own words (its Status `message`), else the client's. */
export function kubernetesReasonOf(err: unknown): string {
  const e = err as { body?: unknown; message?: unknown } | undefined;
  try {
    const body = typeof e?.body === 'string' ? JSON.parse(e.body) : e?.body;
    if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') return (body as { message: string }).message;
  } catch {
    // not JSON: the client's message below
  }
  return typeof e?.message === 'string' ? e.message : String(err);
}

/** The API server answered 404: the object (or its namespace, or its kind) is not there. */
export function isKubernetesNotFound(err: unknown): boolean {
  return kubernetesStatusOf(err) === 404;
}

/**
 * The API server answers a server-side apply that names a field the schema does not declare
 * with a 500 ("failed to create typed patch object ...: .spec.x: field not declared in
 * schema"), though the request is at fault, not the server: a refusal, not an outage.
 */
export function isRefusedApply(err: unknown): boolean {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | undefined;
  if (e?.code !== 500) return false;
  const text = `${typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? '')} ${String(e.message ?? '')}`;
  return /failed to create typed patch object/.test(text);
}

/** A Kubernetes API failure read; undefined when it is none (a bug of ours, say). */
export function kubernetesFault(err: unknown): ClusterFault | undefined {
  const code = unreachableCode(err);
  if (code) return { kind: 'unreachable', code, detail: code };
  const status = kubernetesStatusOf(err);
  if (status !== undefined) {
    const reason = kubernetesReasonOf(err);
    if ((status >= 500 && !isRefusedApply(err)) || status === 429) return { kind: 'failed', status, reason };
    return { kind: 'refused', status, reason };
  }
  // fetch's own failures, and the request deadline (kubernetes.ts) aborting the call.
  const e = err as { name?: unknown; message?: unknown } | undefined;
  const message = String(e?.message ?? '');
  // node-fetch says "The user aborted a request." for our own deadline: named for what it is.
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') return { kind: 'unreachable', code: 'timeout', detail: 'no answer before the request deadline' };
  if (/fetch failed|socket hang up|ECONNREFUSED|network|abort|timeout/i.test(message)) return { kind: 'unreachable', code: 'network', detail: message };
  return undefined;
}

/** The 503 of a cluster out of reach, as compute and the databases both answer it (`cluster_unavailable`). */
export function clusterUnavailable(message: string): UnavailableError {
  return new UnavailableError(message, 'cluster_unavailable');
}
