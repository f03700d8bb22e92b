// How an uptime check reaches a service: the way its users do (through the edge, at its
// public URL). The domain asks; cluster/http-uptime-probe.ts answers with a real request.
import type { Service } from '../records.ts';

/** A response (judged by the monitor's expected status), or why there was none. */
export type ProbeOutcome = { statusCode: number; latencyMs: number } | { error: string; latencyMs: number };

export interface UptimeProbePort {
  /** One GET of `path` on the service's public address; never throws. */
  check(service: Service, path: string, timeoutMs: number, signal?: AbortSignal): Promise<ProbeOutcome>;
}
