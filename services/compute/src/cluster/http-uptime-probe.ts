// The uptime probe port on real HTTP: the service's public origin plus the monitor's path,
// requested through wherever the wiring says its users' traffic enters (the edge).
import type { Service } from '../domain/records.ts';
import type { ProbeOutcome, UptimeProbePort } from '../domain/uptime/uptime-probe-port.ts';
import { probe } from './http-probe.ts';

/** How a service is reached as its users reach it. */
export interface ProbeTarget {
  /** The service's public origin, e.g. `https://web-1a2b3c4d.apps.example.com`; the monitor's path replaces any path. */
  url: string;
  /** Where the connection goes (the edge's address); the URL's host is still the Host header and the TLS name. */
  connectTo?: { host: string; port: number };
  /** PEM of a CA the edge's certificates chain to, trusted besides the system's. */
  ca?: string;
}

/** The target of one service; null when it has none (no public URL yet). */
export type ProbeTargetOf = (service: Service) => ProbeTarget | null | Promise<ProbeTarget | null>;

/** Until the edge is connected no service has a public URL: every check says so. */
export const noPublicUrl: ProbeTargetOf = () => null;

export class HttpUptimeProbe implements UptimeProbePort {
  constructor(private readonly targetOf: ProbeTargetOf) {}

  async check(service: Service, path: string, timeoutMs: number, signal?: AbortSignal): Promise<ProbeOutcome> {
    let target: ProbeTarget | null;
    try {
      target = await this.targetOf(service);
    } catch (err) {
      return { error: `the service's address could not be found: ${err instanceof Error ? err.message : String(err)}`, latencyMs: 0 };
    }
    if (!target) return { error: 'the service has no public URL yet', latencyMs: 0 };
    const origin = new URL(target.url).origin;
    const url = `${origin}${path}`;
    // The path was checked when the monitor was saved; this holds whatever it holds.
    if (new URL(url).origin !== origin) return { error: `the path ${path} would leave the service's origin`, latencyMs: 0 };
    return probe(url, { connectTo: target.connectTo, ca: target.ca, timeoutMs, signal });
  }
}
