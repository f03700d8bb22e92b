// The uptime half of compute's wiring: the store, the probe (reaching each service where
// the target says its users' traffic enters) and the settings. server.ts puts it in the
// context and runs the checker (domain/uptime/uptime-checker.ts) in the background.
import type { Knex } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import type { UptimeDeps } from './domain/uptime/uptime-deps.ts';
import type { EdgeDeps } from './domain/edge/edge-deps.ts';
import { serviceUrl } from './domain/hostnames/hostname-format.ts';
import { HttpUptimeProbe, noPublicUrl, type ProbeTargetOf } from './cluster/http-uptime-probe.ts';
import { KnexUptimeStore } from './store/uptime-store.ts';

/**
 * Checks request the service's public URL, `https://<name>-<short id>.<apps domain>`, as a
 * user would, through the edge: the connection goes where users' traffic enters it (the
 * edge's entry), the URL's host is the Host header and the TLS name, and the apps domain's
 * certificate is checked against its CA (the edge's internal one unless the operator gave
 * a certificate). Without the edge no service has a public URL.
 */
export function publicUrlTarget(edge: EdgeDeps): ProbeTargetOf {
  const port = edge.port;
  if (!port) return noPublicUrl;
  return async (s) => {
    const url = serviceUrl(s, edge.settings.appsDomain);
    if (!url) return null;
    const entry = await port.entry();
    return entry ? { url, connectTo: { host: entry.host, port: entry.port }, ca: entry.caPem } : { url };
  };
}

export function createUptime(config: ComputeConfig, db: Knex, targetOf: ProbeTargetOf): UptimeDeps {
  return {
    store: new KnexUptimeStore(db),
    probe: new HttpUptimeProbe(targetOf),
    settings: {
      minIntervalSeconds: config.PIER_UPTIME_MIN_INTERVAL_SECONDS,
      concurrency: config.PIER_UPTIME_CONCURRENCY,
      retentionDays: config.PIER_UPTIME_RETENTION_DAYS,
    },
  };
}
