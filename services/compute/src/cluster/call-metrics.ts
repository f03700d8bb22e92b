// Every call compute makes to its cluster's API (the Docker engine, the Kubernetes API),
// timed by operation for /metrics.

import type { ClusterCallObserver } from '@pier/kit';

export type { ClusterCallObserver };

/**
 * The operation label of a call's description: what comes before an object's name
 * (`apply Deployment/web-1` is `apply Deployment`), so the label set stays bounded.
 */
export function operationOf(what: string): string {
  const slash = what.indexOf('/');
  return slash === -1 ? what : what.slice(0, slash);
}

/** Runs `fn`, telling `observe` (when there is one) how it went. */
export async function observed<T>(observe: ClusterCallObserver | undefined, what: string, fn: () => Promise<T>): Promise<T> {
  if (!observe) return fn();
  const start = performance.now();
  try {
    const result = await fn();
    observe(operationOf(what), 'ok', (performance.now() - start) / 1000);
    return result;
  } catch (err) {
    observe(operationOf(what), 'error', (performance.now() - start) / 1000);
    throw err;
  }
}
