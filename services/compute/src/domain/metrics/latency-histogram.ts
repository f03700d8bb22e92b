// Latency kept as a histogram rather than a list of samples: buckets whose bounds grow by a
// fifth each (0.5 ms, 0.6 ms, 0.72 ms, ... up to about 17 minutes), so a percentile read
// from it is within 10% of the true value (the bucket's geometric middle is answered), and
// histograms of two minutes, two flushes or two instances of compute add bucket by bucket.
// Stored sparse: bucket index -> count, only the buckets that saw a request.

export type Histogram = Record<string, number>;

const BASE_MS = 0.5;
const GROWTH = 1.2;
const LAST = 80;

/** The bucket a latency falls in: 0 holds everything up to 0.5 ms, i everything up to 0.5 × 1.2^i. */
export function bucketOf(ms: number): number {
  if (!(ms > BASE_MS)) return 0;
  return Math.min(LAST, Math.ceil(Math.log(ms / BASE_MS) / Math.log(GROWTH) - 1e-9));
}

/** The value a bucket stands for: the geometric middle of its bounds. */
function middleOf(bucket: number): number {
  if (bucket === 0) return BASE_MS;
  return BASE_MS * GROWTH ** (bucket - 0.5);
}

export function record(h: Histogram, ms: number, count = 1): void {
  const b = String(bucketOf(ms));
  h[b] = (h[b] ?? 0) + count;
}

export function mergeInto(into: Histogram, from: Histogram): Histogram {
  for (const [b, n] of Object.entries(from)) into[b] = (into[b] ?? 0) + n;
  return into;
}

export function countOf(h: Histogram): number {
  let n = 0;
  for (const v of Object.values(h)) n += v;
  return n;
}

/** The q-quantile (0.5: the median) in ms, rounded to 0.1 ms; null for an empty histogram. */
export function quantile(h: Histogram, q: number): number | null {
  const total = countOf(h);
  if (!total) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const b of Object.keys(h)
    .map(Number)
    .sort((a, z) => a - z)) {
    seen += h[String(b)]!;
    if (seen >= rank) return Math.round(middleOf(b) * 10) / 10;
  }
  return null;
}
