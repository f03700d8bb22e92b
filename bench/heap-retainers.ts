/**
 * What an idle service's V8 heap holds, from a heap snapshot (bench/process-memory.ts writes
 * one per process with PIER_BENCH_HEAP_SNAPSHOT=<dir>):
 *   node --import tsx bench/heap-retainers.ts <file.heapsnapshot> [more...]
 * Prints the self size by kind of object (V8's node type, and the class of objects), the
 * source text V8 keeps of each package's scripts (a Script names its file and holds its
 * source), and the largest strings no script holds (source maps, among others).
 *   node --import tsx bench/heap-retainers.ts --diff <before.heapsnapshot> <after.heapsnapshot>
 * Prints what grew between two snapshots of one process (bench/compute-memory-growth.ts
 * writes one at 0, N/2 and N services): self size and count by kind, the largest growth first.
 */
import { readFile } from 'node:fs/promises';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1).padStart(6)} MB`;

/** The package a script belongs to: node_modules' innermost package, else the repository folder (services/compute, packages/kit, dist/...). */
function packageOf(script: string): string {
  const inModules = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(script);
  if (inModules) return inModules[1]!;
  if (script.startsWith('node:')) return 'node (built in)';
  return /(services\/[^/]+|packages\/[^/]+|deploy\/[^/]+|dist\/[^/]+)/.exec(script)?.[1] ?? 'other scripts';
}

function top(map: Map<string, number>, n: number): string[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, size]) => `    ${mb(size)}  ${key}`);
}

/** Self size and count of each kind of object: V8's node type, and the class (or name) of objects, native and hidden ones. */
function kinds(snap: Snapshot): Map<string, { size: number; count: number }> {
  const { nodes, strings } = snap;
  const meta = snap.snapshot.meta;
  const stride = meta.node_fields.length;
  const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map((f) => meta.node_fields.indexOf(f)) as [number, number, number];
  const byKind = new Map<string, { size: number; count: number }>();
  for (let node = 0; node < nodes.length; node += stride) {
    const type = meta.node_types[0][nodes[node + TYPE]!]!;
    const kind = ['object', 'native', 'hidden'].includes(type) ? `${type} ${strings[nodes[node + NAME]!]!.slice(0, 60)}` : type;
    const k = byKind.get(kind) ?? byKind.set(kind, { size: 0, count: 0 }).get(kind)!;
    k.size += nodes[node + SIZE]!;
    k.count++;
  }
  return byKind;
}

function diff(before: Snapshot, after: Snapshot): void {
  const [a, b] = [kinds(before), kinds(after)];
  const total = (m: Map<string, { size: number }>) => [...m.values()].reduce((t, k) => t + k.size, 0);
  console.log(`self size ${mb(total(a))} → ${mb(total(b))}; the kinds that grew most (size, count):`);
  const rows = [...b]
    .map(([kind, k]) => ({ kind, size: k.size - (a.get(kind)?.size ?? 0), count: k.count - (a.get(kind)?.count ?? 0) }))
    .sort((x, y) => y.size - x.size)
    .slice(0, 30);
  for (const r of rows) console.log(`    ${mb(r.size)}  ${String(r.count).padStart(8)}  ${r.kind}`);
}

function summarise(file: string, snap: Snapshot): void {
  const { nodes, edges, strings } = snap;
  const meta = snap.snapshot.meta;
  const stride = meta.node_fields.length;
  const edgeStride = meta.edge_fields.length;
  const field = (f: string) => meta.node_fields.indexOf(f);
  const [TYPE, NAME, SIZE, EDGES] = [field('type'), field('name'), field('self_size'), field('edge_count')];
  const [EDGE_NAME, EDGE_TO] = [meta.edge_fields.indexOf('name_or_index'), meta.edge_fields.indexOf('to_node')];
  const type = (node: number) => meta.node_types[0][nodes[node + TYPE]!]!;
  const name = (node: number) => strings[nodes[node + NAME]!]!;
  const size = (node: number) => nodes[node + SIZE]!;

  const byKind = new Map([...kinds(snap)].map(([kind, k]) => [kind, k.size]));
  const sourceByPackage = new Map<string, number>();
  const sources = new Set<number>();
  let total = 0;
  for (let node = 0, edge = 0; node < nodes.length; node += stride) {
    total += size(node);
    const end = edge + nodes[node + EDGES]! * edgeStride;
    // A Script is a code node named by its file (a path or file: URL); its `source` edge is its text.
    if (type(node) === 'code' && /^(file:|\/|node:)/.test(name(node))) {
      for (let e = edge; e < end; e += edgeStride) {
        const to = edges[e + EDGE_TO]!;
        if (strings[edges[e + EDGE_NAME]!] !== 'source' || sources.has(to)) continue;
        sources.add(to);
        const pkg = packageOf(name(node));
        sourceByPackage.set(pkg, (sourceByPackage.get(pkg) ?? 0) + size(to));
      }
    }
    edge = end;
  }
  const loose = new Map<string, number>();
  for (let node = 0; node < nodes.length; node += stride)
    if (type(node) === 'string' && size(node) > 100_000 && !sources.has(node)) loose.set(`${name(node).slice(0, 70).replace(/\n/g, '\\n')}`, size(node));

  console.log(`${file}: ${mb(total)} in ${nodes.length / stride} objects`);
  console.log(['  by kind (self size):', ...top(byKind, 12)].join('\n'));
  console.log(['  source text kept, by package:', ...top(sourceByPackage, 15)].join('\n'));
  console.log(['  strings over 100 kB that are no script source:', ...top(loose, 8)].join('\n'));
}

const read = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as Snapshot;
const args = process.argv.slice(2);
if (args[0] === '--diff' && args.length === 3) diff(await read(args[1]!), await read(args[2]!));
else for (const file of args) summarise(file, await read(file));
