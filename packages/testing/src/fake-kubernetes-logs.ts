import type http from 'node:http';

// The pod log subresource of the fake Kubernetes API (GET .../pods/{pod}/log), as the API
// server answers it: text lines, each prefixed with its RFC 3339 time (nanoseconds, trailing
// zeros trimmed as Go's RFC3339Nano does) when `timestamps=true`, filtered by `sinceTime`
// (whole seconds), `sinceSeconds` and `tailLines`; with `follow=true` the response stays
// open and gets each new line until the pod is deleted. A test makes a pod print with
// `write`.

interface Printed {
  /** Nanoseconds since the epoch. */
  ns: bigint;
  text: string;
}

/** Go's RFC3339Nano: the fraction without trailing zeros, none at all when zero. */
function rfc3339Nano(ns: bigint): string {
  const seconds = new Date(Number(ns / 1_000_000_000n) * 1000).toISOString().slice(0, 19);
  const fraction = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${seconds}${fraction ? `.${fraction}` : ''}Z`;
}

export class FakePodLogs {
  private readonly printed = new Map<string, Printed[]>();
  private readonly followers = new Map<string, Set<{ res: http.ServerResponse; timestamps: boolean }>>();
  private lastNs = 0n;

  /** The pod's container prints `lines` now (each a line, without its newline). */
  write(namespace: string, pod: string, ...lines: string[]): void {
    const key = `${namespace}/${pod}`;
    const list = this.printed.get(key) ?? this.printed.set(key, []).get(key)!;
    for (const text of lines) {
      // Increasing times, a microsecond apart at least (lines printed in one burst by a real
      // process are stamped with nanoseconds, rarely twice in one microsecond).
      const now = BigInt(Date.now()) * 1_000_000n;
      this.lastNs = now > this.lastNs ? now : this.lastNs + 1000n;
      const p = { ns: this.lastNs, text };
      list.push(p);
      for (const f of this.followers.get(key) ?? []) f.res.write(this.format(p, f.timestamps));
    }
  }

  /** Answers GET .../pods/{pod}/log for a pod that exists. */
  serve(namespace: string, pod: string, query: URLSearchParams, res: http.ServerResponse): void {
    const key = `${namespace}/${pod}`;
    const timestamps = query.get('timestamps') === 'true';
    let lines = this.printed.get(key) ?? [];
    const sinceTime = query.get('sinceTime');
    if (sinceTime) {
      const from = BigInt(Date.parse(sinceTime)) * 1_000_000n;
      lines = lines.filter((p) => p.ns >= from);
    }
    const sinceSeconds = query.get('sinceSeconds');
    if (sinceSeconds) {
      const from = BigInt(Date.now() - Number(sinceSeconds) * 1000) * 1_000_000n;
      lines = lines.filter((p) => p.ns >= from);
    }
    const tail = query.get('tailLines');
    if (tail) lines = lines.slice(-Number(tail));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write(lines.map((p) => this.format(p, timestamps)).join(''));
    if (query.get('follow') !== 'true') return void res.end();
    const set = this.followers.get(key) ?? this.followers.set(key, new Set()).get(key)!;
    const follower = { res, timestamps };
    set.add(follower);
    res.on('close', () => set.delete(follower));
  }

  /** The pod was deleted: its followed streams end. */
  podGone(namespace: string, pod: string): void {
    const key = `${namespace}/${pod}`;
    for (const f of this.followers.get(key) ?? []) f.res.end();
    this.followers.delete(key);
  }

  stop(): void {
    for (const set of this.followers.values()) for (const f of set) f.res.end();
    this.followers.clear();
  }

  private format(p: Printed, timestamps: boolean): string {
    return `${timestamps ? `${rfc3339Nano(p.ns)} ` : ''}${p.text}\n`;
  }
}
