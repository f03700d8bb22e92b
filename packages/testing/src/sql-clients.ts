// The real command-line clients, as users run them: psql, the mysql client (MariaDB's),
// and either of them inside a VPC's network, as a service in that VPC would.
import { execFile } from 'node:child_process';
import { vpcNetwork } from '@pier/kit';
import { testLabels } from './docker.ts';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() });
    });
  });
}

/** The real psql: one command, unaligned tuples only. */
export function psql(conninfo: string, sql: string): Promise<Run> {
  return run('psql', ['-X', '-q', '-tA', '-v', 'ON_ERROR_STOP=1', '-d', conninfo, '-c', sql], { PGCONNECT_TIMEOUT: '10' });
}

/** The real mysql client (MariaDB's), from the parts of a mysql:// URL (killed after `timeoutMs`). */
export function mysqlCli(url: string, sql: string, hostOverride?: string, timeoutMs?: number): Promise<Run> {
  const u = new URL(url);
  return run(
    'mysql',
    [
      `--host=${hostOverride ?? u.hostname}`,
      `--port=${u.port}`,
      `--user=${decodeURIComponent(u.username)}`,
      `--password=${decodeURIComponent(u.password)}`,
      '--connect-timeout=10',
      '--batch',
      '--skip-column-names',
      u.pathname.slice(1),
      '-e',
      sql,
    ],
    {},
    timeoutMs,
  );
}

/** Labels of this test run as `docker run --label` values (./pier test removes what carries its run id). */
export const RUN_LABELS = Object.entries(testLabels()).map(([k, v]) => `${k}=${v}`);

/** Runs a client inside the VPC's network, as a service in the same VPC would. */
export function inVpc(vpcId: string, image: string, cmd: string[]): Promise<Run> {
  return run(
    'docker',
    ['run', '--rm', ...RUN_LABELS.flatMap((l) => ['--label', l]), '--network', vpcNetwork(vpcId), '--entrypoint', cmd[0]!, image, ...cmd.slice(1)],
    { DOCKER_BUILDKIT: '0' },
  );
}
