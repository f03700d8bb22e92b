// A service's probes as a test reads them: /readyz, and /metrics parsed.
import { parsePrometheusText, type PromSample } from '@pier/kit';

export { parsePrometheusText, type PromSample };

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
