// What compute and databases say on /metrics about their calls to the cluster
// (pier_cluster_call_duration_seconds, by operation): where their cluster time went.

interface Operation {
  count: number;
  seconds: number;
}

async function operations(port: number): Promise<Map<string, Operation>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const ops = new Map<string, Operation>();
  for (const m of text.matchAll(/^pier_cluster_call_duration_seconds_(count|sum)\{([^}]*)\} (\S+)$/gm)) {
    const op = /operation="([^"]*)"/.exec(m[2]!)?.[1] ?? '?';
    const o = ops.get(op) ?? ops.set(op, { count: 0, seconds: 0 }).get(op)!;
    if (m[1] === 'count') o.count += Number(m[3]);
    else o.seconds += Number(m[3]);
  }
  return ops;
}

/** How many times `operation` was called so far (ok or not). */
export async function callsOf(port: number, operation: string): Promise<number> {
  return (await operations(port)).get(operation)?.count ?? 0;
}

/** The operations that took the most cluster time: `op ×count, total s`. */
export async function clusterTime(port: number, top = 8): Promise<string> {
  return [...(await operations(port))]
    .sort(([, a], [, b]) => b.seconds - a.seconds)
    .slice(0, top)
    .map(([op, o]) => `${op} ×${o.count} ${o.seconds.toFixed(1)} s`)
    .join(', ');
}
