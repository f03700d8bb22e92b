// The probe bench/process-memory.ts and bench/compute-memory-growth.ts import into a service
// before its own code (a data: URL, so it needs no loader): on SIGUSR2 it prints
// process.memoryUsage() on a line starting `pier-memory `, and, when the process runs with
// --expose-gc, the same again after a full collection (`collected`): resident memory counts
// what V8 keeps between collections, the collected heap only what is live. It writes a heap
// snapshot when PIER_MEMORY_SNAPSHOT_DIR names a directory, after measuring (writing one
// collects garbage and grows the process).

const PROBE = `import v8 from 'node:v8';
process.on('SIGUSR2', () => {
  const usage = process.memoryUsage();
  let collected;
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    collected = process.memoryUsage();
  }
  const dir = process.env.PIER_MEMORY_SNAPSHOT_DIR;
  const file = dir ? v8.writeHeapSnapshot(dir + '/compute-' + process.pid + '-' + Date.now() + '.heapsnapshot') : undefined;
  process.stderr.write('pier-memory ' + JSON.stringify({ ...usage, collected, file }) + '\\n');
});`;

/** Node flags that load the probe. */
export const memoryProbe = ['--import', `data:text/javascript,${encodeURIComponent(PROBE)}`];

export interface MemoryFigures {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** After a full collection, when the process runs with --expose-gc. */
  collected?: Omit<MemoryFigures, 'collected' | 'file'>;
  file?: string;
}

export const PROBE_PREFIX = 'pier-memory ';

/** The figures on a line the probe printed, or undefined for any other line. */
export function probeFigures(line: string): MemoryFigures | undefined {
  return line.startsWith(PROBE_PREFIX) ? (JSON.parse(line.slice(PROBE_PREFIX.length)) as MemoryFigures) : undefined;
}
