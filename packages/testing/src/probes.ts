// A service's probes as a test reads them: /readyz, and /metrics parsed.

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;

/**
 * Parses Prometheus text (version 0.0.4) strictly: a line that is neither a comment nor a
 * well-formed sample fails, so a test proves the whole answer is scrapeable.
 */
export function parsePrometheusText(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    let consumed = 0;
    for (const l of body.matchAll(LABEL)) {
      if (l.index !== consumed) throw new Error(`malformed labels: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed = l.index + l[0].length;
    }
    if (consumed !== body.length) throw new Error(`malformed labels: ${line}`);
    const value = floatOf(m[3]!);
    if (value === undefined) throw new Error(`malformed value: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

/** A sample value as Prometheus reads it (Go's ParseFloat: `NaN`, `+Inf` in any case). */
function floatOf(text: string): number | undefined {
  const special = /^([+-]?)(inf|nan)$/i.exec(text);
  if (special) return special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  const n = Number(text);
  return text.trim() === '' || Number.isNaN(n) ? undefined : n;
}

/** The value of the sample named `name` whose labels include `labels`; undefined when none. */
export function sampleValue(samples: PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** GET `${baseUrl}/metrics`, parsed. */
export async function scrape(baseUrl: string): Promise<PromSample[]> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  if (!res.headers.get('content-type')?.startsWith('text/plain')) throw new Error(`GET /metrics content type ${res.headers.get('content-type')}`);
  return parsePrometheusText(await res.text());
}

/** A service's GET /readyz answer. */
export interface ReadyzAnswer {
  status: number;
  body: { status: 'ready' | 'not_ready'; service: string; checks: Record<string, { ok: boolean; error?: string }> };
}

/** GET `${baseUrl}/readyz`. */
export async function readyz(baseUrl: string): Promise<ReadyzAnswer> {
  const res = await fetch(`${baseUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as ReadyzAnswer['body'] };
}
