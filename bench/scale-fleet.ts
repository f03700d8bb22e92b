// The scale benchmark's tenants: VPCs of one workspace, each with the identity token the
// gateway would forward for its owner (signed here, as bench/compute-alone.ts does), and
// the services and databases created in them, straight to compute's and databases' HTTP
// ports, many at a time. One VPC ("the big one") holds the first 200 of each, so a full
// page of 200 exists to list; the rest are spread over the other VPCs in turn.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { IDENTITY_HEADER, importIdentityKey, signIdentity } from '@pier/kit';

export const PAGE = 200;

export interface Vpc {
  workspaceId: string;
  vpcId: string;
  identity: string;
}

export interface Answer {
  status: number;
  body: any;
  ms: number;
  /** compute's x-pier-cluster-calls, when the answer has it. */
  clusterCalls: number;
}

export async function makeVpcs(privateJwk: string, count: number): Promise<Vpc[]> {
  const key = await importIdentityKey(privateJwk);
  const workspaceId = randomUUID();
  const subject = randomUUID();
  return Promise.all(
    Array.from({ length: count }, async () => {
      const vpcId = randomUUID();
      // Long enough for the whole run at full size.
      const identity = await signIdentity(key, { kind: 'user', subject, role: 'owner', workspaceId, vpcId }, 6 * 3600);
      return { workspaceId, vpcId, identity };
    }),
  );
}

/** Where the i-th resource of `total` goes: the big VPC (index 0) first, then the others in turn. */
export function vpcIndexOf(i: number, vpcs: number): number {
  if (i < PAGE || vpcs === 1) return 0;
  return 1 + ((i - PAGE) % (vpcs - 1));
}

/** One request over a keep-alive agent, as the owner of `vpc`, with its latency. */
export function call(agent: http.Agent, port: number, vpc: Vpc, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const t0 = performance.now();
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        agent,
        headers: { [IDENTITY_HEADER]: vpc.identity, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON: kept as text for the error message */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, ms: performance.now() - t0, clusterCalls: Number(res.headers['x-pier-cluster-calls'] ?? NaN) });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export const servicesPath = (v: Vpc) => `/api/v1/workspaces/${v.workspaceId}/vpcs/${v.vpcId}/services`;
export const databasesPath = (v: Vpc) => `/api/v1/workspaces/${v.workspaceId}/vpcs/${v.vpcId}/databases`;

export interface Creation {
  kind: 'service' | 'database';
  index: number;
}

/**
 * Creates `items` with `concurrency` requests in flight, each to its VPC; `done` is told of
 * each one made. A 503 (the cluster busy) is tried again after a pause; any other failure stops it all.
 */
export async function createAll(
  items: Creation[],
  opts: { vpcs: Vpc[]; computePort: number; databasesPort: number; concurrency: number; image: string; done: (c: Creation) => void },
): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency * 2 });
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      const vpc = opts.vpcs[vpcIndexOf(item.index, opts.vpcs.length)]!;
      const [port, path, body, ok] =
        item.kind === 'service'
          ? [opts.computePort, servicesPath(vpc), { name: `s-${item.index}`, image: opts.image }, 201]
          : [opts.databasesPort, databasesPath(vpc), { name: `d-${item.index}`, engine: 'postgresql' }, 202];
      for (let attempt = 1; ; attempt++) {
        const res = await call(agent, port, vpc, 'POST', path, body);
        if (res.status === ok) break;
        if (res.status !== 503 || attempt === 5) throw new Error(`create ${item.kind} ${item.index}: ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 1000 * attempt));
      }
      opts.done(item);
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
  } finally {
    agent.destroy();
  }
}

/** Every page of a VPC's list. */
export async function listAll(agent: http.Agent, port: number, vpc: Vpc, path: string): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | null = null;
  do {
    const res = await call(agent, port, vpc, 'GET', `${path}?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (res.status !== 200) throw new Error(`list ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    all.push(...res.body.items);
    cursor = res.body.next_cursor;
  } while (cursor);
  return all;
}
