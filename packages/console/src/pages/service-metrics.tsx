// The Metrics section of a service's page: CPU, memory, requests per second, responses by
// status class and latency p50/p95 over 1h, 24h or 7d, from GET …/metrics. Drawn as plain
// SVG (a chart library would cost more than the whole console's charts need); presentation
// attributes and classes only, so the gateway's CSP (no inline style) holds. Each chart's text
// alternative is its caption (the latest value and the window's peak), and the table below
// holds every step's numbers.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading } from '../ui.tsx';

const METRICS = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/metrics' as const;
type Metrics = paths[typeof METRICS]['get']['responses'][200]['content']['application/json'];
type Point = Metrics['points'][number];
type Window = Metrics['window'];

const WINDOWS: { value: Window; label: string; pollMs: number }[] = [
  { value: '1h', label: 'hour', pollMs: 15_000 },
  { value: '24h', label: '24 hours', pollMs: 60_000 },
  { value: '7d', label: '7 days', pollMs: 300_000 },
];

interface Series {
  name: string;
  /** A class of styles.css that colours it. */
  tone: string;
  values: (number | null)[];
}

const W = 300;
const H = 80;
const PAD = 4;

/**
 * An SVG path through the points, broken where a value is missing (never drawn as zero); a
 * value alone between gaps is a dot (a zero-length segment, which the round cap draws).
 */
function pathOf(values: (number | null)[], max: number): string {
  // Inset by PAD so a line's round cap (and a lone dot) at an edge is not cut off.
  const step = values.length > 1 ? (W - 2 * PAD) / (values.length - 1) : 0;
  let d = '';
  let run = 0;
  const endRun = () => {
    if (run === 1) d += 'h0.01 ';
    run = 0;
  };
  values.forEach((v, i) => {
    if (v === null) return endRun();
    const x = (PAD + i * step).toFixed(1);
    const y = (H - PAD - (max > 0 ? (v / max) * (H - 2 * PAD) : 0)).toFixed(1);
    d += `${run ? 'L' : 'M'}${x} ${y} `;
    run++;
  });
  endRun();
  return d.trim();
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u ? v.toFixed(1) : v} ${units[u]}`;
}

const cores = (n: number) => `${n < 0.01 ? n.toFixed(4) : n.toFixed(3)} cores`;
const perSecond = (n: number) => `${n} req/s`;
const ms = (n: number) => `${n} ms`;

function latest(values: (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null && values[i] !== undefined) return values[i]!;
  return null;
}

function Chart(props: { id: string; title: string; series: Series[]; format: (n: number) => string; empty: string }) {
  const all = props.series.flatMap((s) => s.values).filter((v): v is number => v !== null);
  const max = all.length ? Math.max(...all) : 0;
  const caption = all.length
    ? props.series
        .map((s) => {
          const now = latest(s.values);
          const peak = Math.max(...s.values.filter((v): v is number => v !== null), 0);
          return `${s.name}: ${now === null ? 'no value' : props.format(now)} now, peak ${props.format(peak)}`;
        })
        .join('; ')
    : props.empty;
  return (
    <figure class="chart" aria-labelledby={`${props.id}-title`}>
      <h3 id={`${props.id}-title`}>{props.title}</h3>
      <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-labelledby={`${props.id}-title ${props.id}-caption`}>
        <line class="chart-axis" x1="0" y1={H - 1} x2={W} y2={H - 1} vector-effect="non-scaling-stroke" />
        {props.series.map((s) => (
          <path key={s.name} class={`chart-line ${s.tone}`} d={pathOf(s.values, max)} vector-effect="non-scaling-stroke" />
        ))}
      </svg>
      <figcaption id={`${props.id}-caption`}>
        {props.series.length > 1 && (
          <span class="chart-legend">
            {props.series.map((s) => (
              <span key={s.name} class={`legend ${s.tone}`}>
                {s.name}
              </span>
            ))}
          </span>
        )}
        <span>{caption}</span>
      </figcaption>
    </figure>
  );
}

const cls = (p: Point, k: '2xx' | '3xx' | '4xx' | '5xx') => (p.responses ? p.responses[k] : null);

function Charts({ m }: { m: Metrics }) {
  const pts = m.points;
  const noRequests = m.requests_unavailable ?? 'No requests counted in this window.';
  return (
    <>
      <div class="charts">
        <Chart
          id="m-cpu"
          title="CPU (all replicas)"
          format={cores}
          empty="No CPU reading in this window."
          series={[{ name: 'CPU', tone: 'tone-1', values: pts.map((p) => p.cpu_cores) }]}
        />
        <Chart
          id="m-mem"
          title="Memory (all replicas)"
          format={bytes}
          empty="No memory reading in this window."
          series={[{ name: 'Memory', tone: 'tone-1', values: pts.map((p) => p.memory_bytes) }]}
        />
        <Chart
          id="m-rps"
          title="Requests per second"
          format={perSecond}
          empty={noRequests}
          series={[{ name: 'Requests', tone: 'tone-1', values: pts.map((p) => p.requests_per_second) }]}
        />
        <Chart
          id="m-status"
          title="Responses by status"
          format={String}
          empty={noRequests}
          series={[
            { name: '2xx', tone: 'tone-ok', values: pts.map((p) => cls(p, '2xx')) },
            { name: '3xx', tone: 'tone-1', values: pts.map((p) => cls(p, '3xx')) },
            { name: '4xx', tone: 'tone-warn', values: pts.map((p) => cls(p, '4xx')) },
            { name: '5xx', tone: 'tone-danger', values: pts.map((p) => cls(p, '5xx')) },
          ]}
        />
        <Chart
          id="m-latency"
          title="Latency"
          format={ms}
          empty={noRequests}
          series={[
            { name: 'p50', tone: 'tone-1', values: pts.map((p) => p.latency_p50_ms) },
            { name: 'p95', tone: 'tone-warn', values: pts.map((p) => p.latency_p95_ms) },
          ]}
        />
      </div>
      <details>
        <summary>Every step as a table</summary>
        <div class="table-wrap table-scroll" tabIndex={0} aria-label="Metrics table">
          <table>
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col">CPU</th>
                <th scope="col">Memory</th>
                <th scope="col">Req/s</th>
                <th scope="col">2xx/3xx/4xx/5xx</th>
                <th scope="col">p50</th>
                <th scope="col">p95</th>
              </tr>
            </thead>
            <tbody>
              {[...pts].reverse().map((p) => (
                <tr key={p.at}>
                  <td>{new Date(p.at).toLocaleString()}</td>
                  <td>{p.cpu_cores === null ? '—' : cores(p.cpu_cores)}</td>
                  <td>{p.memory_bytes === null ? '—' : bytes(p.memory_bytes)}</td>
                  <td>{p.requests_per_second ?? '—'}</td>
                  <td>{p.responses ? `${p.responses['2xx']}/${p.responses['3xx']}/${p.responses['4xx']}/${p.responses['5xx']}` : '—'}</td>
                  <td>{p.latency_p50_ms === null ? '—' : ms(p.latency_p50_ms)}</td>
                  <td>{p.latency_p95_ms === null ? '—' : ms(p.latency_p95_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </>
  );
}

export function ServiceMetrics({ serviceId }: { serviceId: string }) {
  const { client, workspaceId, vpcId } = useSession();
  const [window, setWindow] = useState<Window>('1h');
  const chosen = WINDOWS.find((w) => w.value === window)!;
  const metrics = useQuery(
    `metrics:${workspaceId}:${vpcId}:${serviceId}:${window}`,
    () => unwrap(client.GET(METRICS, { params: { path: { workspaceID: workspaceId, vpcID: vpcId, serviceID: serviceId }, query: { window } } })),
    chosen.pollMs,
  );
  const m = metrics.data;
  return (
    <section class="panel" aria-labelledby="metrics-title">
      <div class="panel-head">
        <h2 id="metrics-title">Metrics</h2>
        <div role="group" aria-label="Window">
          {WINDOWS.map((w) => (
            <button key={w.value} type="button" aria-pressed={w.value === window} onClick={() => setWindow(w.value)}>
              {w.value}
            </button>
          ))}
        </div>
      </div>
      <ErrorNote error={metrics.error} />
      {m ? (
        <>
          <p class="muted">
            The last {chosen.label} in steps of {m.resolution_seconds >= 3600 ? `${m.resolution_seconds / 3600} h` : `${m.resolution_seconds / 60} min`}; CPU
            and memory of all replicas together (each may use {m.limits.cpu_cores} cores and {bytes(m.limits.memory_bytes)}).
          </p>
          <Charts m={m} />
        </>
      ) : (
        metrics.loading && <Loading what="the metrics" />
      )}
    </section>
  );
}
