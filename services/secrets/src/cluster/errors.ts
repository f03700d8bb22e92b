import { ApiException } from '@kubernetes/client-node';

/**
 * A short, value-free description of a store failure for logs. Kubernetes errors carry the
 * response body; only its status and reason are kept, so nothing the request carried can
 * be echoed into a log line.
 */
export function describeStoreError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as { reason?: string } | string | undefined;
    const reason = typeof body === 'object' && body?.reason ? ` ${body.reason}` : '';
    return `kubernetes API answered ${err.code}${reason}`;
  }
  const e = err as { name?: string; code?: string; message?: string };
  const message = (e?.message ?? String(err)).slice(0, 300);
  return e?.code ? `${e.code}: ${message}` : message;
}
