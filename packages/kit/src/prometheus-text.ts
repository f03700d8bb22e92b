// Prometheus' text exposition (version 0.0.4) read back: what a test reads of our own
// /metrics, and what compute reads of the ingress controller's (cluster/traefik-edge-traffic.ts).

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;

/**
 * Parses Prometheus text strictly: a line that is neither a comment nor a well-formed sample
 * fails, so a test proves the whole answer is scrapeable and a reader never counts half a
 * line. `keep`: only samples of the names it accepts are parsed (an ingress controller's
 * answer holds thousands of lines of other metrics); the others are only checked for a name.
 */
export function parsePrometheusText(text: string, keep?: (name: string) => boolean): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    if (keep && !keep(/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? '')) continue;
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
