import { readdir, readFile } from 'node:fs/promises';

// CPU time per process from /proc (Linux), to say where a request's cost goes. On other
// systems the figures are simply left out.

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

async function ticksOf(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces, hence the last ')').
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return 0;
  }
}

/** PostgreSQL backends serving `database` (their process title names it). */
async function backendsOf(database: string): Promise<number[]> {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return pids;
  }
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (e) => {
        try {
          const cmd = await readFile(`/proc/${e}/cmdline`, 'utf8');
          if (cmd.startsWith('postgres: ') && cmd.includes(` ${database} `)) pids.push(Number(e));
        } catch {
          /* gone */
        }
      }),
  );
  return pids;
}

export type CpuSnapshot = Record<string, number>;

/** CPU seconds used so far by each named process (and by this process as `client`). */
export async function snapshot(processes: Record<string, number | undefined>, database: string): Promise<CpuSnapshot> {
  const out: CpuSnapshot = {};
  for (const [name, pid] of Object.entries(processes)) if (pid) out[name] = (await ticksOf(pid)) / TICKS_PER_SECOND;
  let pg = 0;
  for (const pid of await backendsOf(database)) pg += await ticksOf(pid);
  out.postgres = pg / TICKS_PER_SECOND;
  const self = process.cpuUsage();
  out.client = (self.user + self.system) / 1e6;
  return out;
}

/** CPU milliseconds per request of each process between two snapshots. */
export function perRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): string {
  return Object.keys(after)
    .map((name) => `${name} ${(((after[name]! - (before[name] ?? 0)) * 1000) / requests).toFixed(3)}`)
    .join(', ');
}
