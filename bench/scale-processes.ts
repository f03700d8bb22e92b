// What the scale benchmark's processes use. Resident memory: each service process's own
// (VmRSS, and its peak VmHWM, from /proc), and the benchmark's PostgreSQL container's as
// Docker counts it (its cgroup's usage less the page cache), when infra.ts started one.
// CPU: bench/cpu.ts's snapshots, of the services and of the cluster's own processes
// (deploy/kube/cluster.sh keeps their PIDs beside the kubeconfig), to say where time went.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { snapshot, type CpuSnapshot } from './cpu.ts';

const run = promisify(execFile);

/** A process's resident memory now and at its peak, in MB; null where /proc cannot tell. */
export async function residentMb(pid: number): Promise<{ now: number; peak: number } | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const mb = (field: string) => Math.round(Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024);
    return { now: mb('VmRSS'), peak: mb('VmHWM') };
  } catch {
    return null;
  }
}

/** The PostgreSQL container infra.ts labelled, if there is one. */
async function postgresMemory(): Promise<string> {
  if (process.env.PIER_BENCH_POSTGRES_URL) return 'not measured (PIER_BENCH_POSTGRES_URL: not a container of this benchmark)';
  try {
    const ids = (await run('docker', ['ps', '-q', '--filter', 'label=pier.bench=true', '--filter', 'expose=5432'])).stdout.trim().split('\n').filter(Boolean);
    if (ids.length !== 1) return `not measured (${ids.length} benchmark PostgreSQL containers)`;
    const { stdout } = await run('docker', ['stats', '--no-stream', '--format', '{{.MemUsage}}', ids[0]!]);
    return stdout.trim().split(' / ')[0]!;
  } catch (err) {
    return `not measured (${String(err).split('\n')[0]})`;
  }
}

export async function memoryLine(pids: Record<string, number>, services: number, databases: number, when = ''): Promise<string> {
  const parts = [];
  for (const [name, pid] of Object.entries(pids)) {
    const mb = await residentMb(pid);
    parts.push(`${name} ${mb ? `${mb.now} MB (peak ${mb.peak})` : 'not readable (no /proc here)'}`);
  }
  parts.push(`postgresql ${await postgresMemory()}`);
  return `scale: memory at ${services} services (${databases} databases)${when ? `, ${when}` : ''}: ${parts.join(', ')}`;
}

const CLUSTER_PROCESSES = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy', 'coredns'];

/** CPU seconds so far of `pids`, of the cluster's processes, and of PostgreSQL's backends of `database`. */
export async function cpuNow(pids: Record<string, number | undefined>, kubeconfig: string, database: string): Promise<CpuSnapshot> {
  const cluster: Record<string, number | undefined> = {};
  for (const name of CLUSTER_PROCESSES) {
    const pid = await readFile(path.join(path.dirname(kubeconfig), 'pids', name), 'utf8').catch(() => '');
    if (pid.trim()) cluster[name] = Number(pid.trim());
  }
  return snapshot({ ...pids, ...cluster }, database);
}

/** CPU seconds each process used between two snapshots, the busiest first. */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): string {
  return Object.keys(after)
    .map((name) => [name, after[name]! - (before[name] ?? 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${s.toFixed(0)} s`)
    .join(', ');
}
