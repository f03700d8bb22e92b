// The kubernetes edge's requests, for service metrics (domain/metrics): the ingress
// controller (Traefik) sends a service's requests to its pods without passing through Pier,
// so they are read from Traefik's own Prometheus metrics, per router. Traefik names the
// router of an Ingress rule after the Ingress (the service's name), its namespace (the
// VPC's) and the rule's host, so each route's routers are known from our records
// (`routeKeys`). Every `intervalMs` each Traefik instance is scraped (every address its
// metrics URL's host resolves to: a headless Service names every replica), and what its
// request-duration histograms grew by since the last scrape becomes counts of requests, per
// status code and latency bucket, at the time of the scrape.
//
// What counters cannot give: requests answered before a follow's first scrape (a start, a
// handover to another compute) are not counted, and the minutes before it are not covered;
// latency is as precise as Traefik's buckets (cluster.sh sets bounds 1.73 times apart: a
// percentile within 30%).
import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { parsePrometheusText, vpcNamespace, type Logger, type PromSample } from '@pier/kit';
import type { EdgeRoute } from '../domain/edge/edge-port.ts';
import type { EdgeFollower, EdgeRequest, EdgeTrafficPort } from '../domain/metrics/metrics-port.ts';

const BUCKETS = 'traefik_router_request_duration_seconds_bucket';
const STARTED = 'process_start_time_seconds';
/** An instance not answering for this long is forgotten (a replica gone); one that comes back is read afresh. */
const FORGET_MS = 10 * 60_000;
/** Traefik's answer with many routers runs to megabytes; more than this is not a metrics page. */
const MAX_BYTES = 64 * 1024 * 1024;

export interface TraefikTrafficOptions {
  /** Traefik's Prometheus endpoints (http://traefik-metrics.ingress:9100/metrics); each address a host resolves to is one instance. */
  urls: string[];
  intervalMs: number;
  timeoutMs: number;
  log: Logger;
}

/** Traefik's provider.Normalize: every run of characters that are not letters or digits becomes one `-`, none at either end. */
function normalize(name: string): string {
  return name
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .join('-');
}

/** The router Traefik's kubernetesIngress provider makes of an Ingress rule with path `/` (pkg/provider/kubernetes/ingress). */
export function traefikRouterKey(namespace: string, ingress: string, host: string): string {
  return normalize(`${namespace}-${ingress}-${host}/`);
}

/** Every namespace of a VPC starts so: where a route's router key starts. */
const NAMESPACE_PREFIX = vpcNamespace('');

/**
 * A router label as traefikRouterKey names it: without its provider (`@kubernetes`), and
 * without the entry point Traefik puts first on a router it copies onto each entry point
 * with settings of its own (`websecure-pier-vpc-…` on the TLS entry point).
 */
function routerKey(label: string): string {
  const key = label.replace(/@[^@]*$/, '');
  const at = key.indexOf(`-${NAMESPACE_PREFIX}`);
  return at >= 0 && !key.startsWith(NAMESPACE_PREFIX) ? key.slice(at + 1) : key;
}

/** One instance's cumulative bucket counts: router → status code → upper bound (s) → count. */
type Counts = Map<string, Map<number, Map<number, number>>>;

interface Instance {
  /** When the process started (s since the epoch): a new value is a restart, its counters from zero. */
  started: number | null;
  counts: Counts;
  seenAt: number;
}

/** One Traefik's answer: when it started, and its request-duration buckets (only those lines are parsed). */
export function readAnswer(text: string): { started: number | null; counts: Counts } {
  const samples = parsePrometheusText(text, (n) => n === BUCKETS || n === STARTED);
  return { started: samples.find((s) => s.name === STARTED)?.value ?? null, counts: countsOf(samples) };
}

/** Request-duration buckets summed over method and protocol (what a route's figures need). */
function countsOf(samples: PromSample[]): Counts {
  const counts: Counts = new Map();
  for (const s of samples) {
    const { router, code, le } = s.labels;
    if (s.name !== BUCKETS || !router || !code || le === undefined) continue;
    const key = routerKey(router);
    const byCode = counts.get(key) ?? new Map<number, Map<number, number>>();
    counts.set(key, byCode);
    const byLe = byCode.get(Number(code)) ?? new Map<number, number>();
    byCode.set(Number(code), byLe);
    const bound = le === '+Inf' ? Infinity : Number(le);
    byLe.set(bound, (byLe.get(bound) ?? 0) + s.value);
  }
  return counts;
}

/** The latency a bucket's requests are counted at, ms: the geometric middle of its bounds. */
function latencyMs(lower: number, upper: number): number {
  if (upper === Infinity) return lower * 1000 * 1.5;
  if (lower <= 0) return (upper * 1000) / 2;
  return Math.sqrt(lower * upper) * 1000;
}

/**
 * The requests answered between two reads of one instance: per router and code, what each
 * bucket grew by. A series that shrank was restarted (Traefik drops a removed router's series
 * and starts it again from zero), so all it holds is new; one `before` lacks is new too.
 */
export function requestsBetween(before: Counts, after: Counts, at: number): EdgeRequest[] {
  const out: EdgeRequest[] = [];
  for (const [router, byCode] of after) {
    for (const [status, byLe] of byCode) {
      const old = before.get(router)?.get(status);
      const bounds = [...byLe.keys()].sort((a, b) => a - b);
      const total = byLe.get(Infinity) ?? 0;
      const restarted = !old || (old.get(Infinity) ?? 0) > total;
      let lower = 0;
      let below = 0;
      for (const upper of bounds) {
        const grown = byLe.get(upper)! - (restarted ? 0 : (old.get(upper) ?? 0));
        const count = grown - below;
        below = Math.max(below, grown);
        if (count > 0) out.push({ host: router, status, durationMs: latencyMs(lower, upper), at, count });
        lower = upper;
      }
    }
  }
  return out;
}

export class TraefikEdgeTraffic implements EdgeTrafficPort {
  constructor(private readonly o: TraefikTrafficOptions) {}

  routeKeys(r: EdgeRoute): string[] {
    return [r.serviceHost, ...r.customHosts].map((h) => traefikRouterKey(vpcNamespace(r.vpcId), r.serviceName, h.toLowerCase()));
  }

  /** `after` is not used: counters cannot be read back to a time; the first read is where counting starts. */
  async follow(_after: number | null, on: EdgeFollower, signal: AbortSignal): Promise<void> {
    const instances = new Map<string, Instance>();
    let lastRound: number | null = null;
    while (!signal.aborted) {
      const at = Date.now();
      const answers = await this.scrapeAll(signal);
      if (signal.aborted) return;
      const batch: EdgeRequest[] = [];
      for (const [key, { started, counts }] of answers) {
        const before = instances.get(key);
        if (before) {
          // A restart since the last read: everything it counted is new.
          const restarted = started !== null && before.started !== null && started !== before.started;
          batch.push(...requestsBetween(restarted ? new Map() : before.counts, counts, at));
        } else if (lastRound !== null && started !== null && started * 1000 >= lastRound) {
          // A replica that started after the last round: all it counted is new. Otherwise (the
          // first round, or one known to run before it) this read is where it starts.
          batch.push(...requestsBetween(new Map(), counts, at));
        }
        instances.set(key, { started, counts, seenAt: at });
      }
      for (const [key, i] of instances) if (at - i.seenAt > FORGET_MS) instances.delete(key);
      if (lastRound === null) on.opened();
      lastRound = at;
      if (batch.length) on.requests(batch);
      await sleep(this.o.intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** Every instance's samples by `url@address`; throws when none answered (the collector retries). */
  private async scrapeAll(signal: AbortSignal): Promise<Map<string, ReturnType<typeof readAnswer>>> {
    const targets = (
      await Promise.all(
        this.o.urls.map(async (url) => {
          const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
          const addresses = await dns.lookup(host, { all: true }).catch(() => []);
          return addresses.map((a) => ({ url, address: a.address }));
        }),
      )
    ).flat();
    const answers = new Map<string, ReturnType<typeof readAnswer>>();
    const failures: string[] = [];
    await Promise.all(
      targets.map(async ({ url, address }) => {
        try {
          const text = await this.get(url, address, signal);
          answers.set(`${url}@${address}`, readAnswer(text));
        } catch (err) {
          failures.push(`${url} at ${address}: ${(err as Error).message}`);
        }
      }),
    );
    if (!answers.size && !signal.aborted) {
      throw new Error(`no Traefik metrics could be read (${failures.join('; ') || `no address for ${this.o.urls.join(', ')}`})`);
    }
    if (failures.length) this.o.log.debug({ failures }, 'metrics: some Traefik instances did not answer; read again next round');
    return answers;
  }

  /** GET `url` from one of its host's addresses, with the URL's own Host (and TLS name). */
  private get(url: string, address: string, signal: AbortSignal): Promise<string> {
    const u = new URL(url);
    const client = u.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.get(
        {
          host: address,
          port: u.port || (u.protocol === 'https:' ? 443 : 80),
          path: `${u.pathname}${u.search}`,
          headers: { host: u.host, accept: 'text/plain' },
          servername: u.hostname,
          timeout: this.o.timeoutMs,
          signal,
          agent: false,
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`answered ${res.statusCode}`));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BYTES) req.destroy(new Error(`answer over ${MAX_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.o.timeoutMs} ms`)));
      req.on('error', reject);
    });
  }
}
