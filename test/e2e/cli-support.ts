// Running the built `pier` CLI as a user would: a subprocess of the bundled file, with its
// own config directory, against a platform started by the e2e harness.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundle } from '../../packages/cli/bundle.ts';
import { startPlatform, type Platform, type PlatformOptions } from '../support/platform.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliHarness {
  platform: Platform;
  /** The config directory the CLI reads and writes (PIER_CONFIG_DIR). */
  dir: string;
  bin: string;
  /** Runs `pier ...args` (stdin is `input`, or empty: never a terminal). */
  pier(args: string[], options?: { input?: string; env?: Record<string, string> }): Promise<CliRun>;
  /** `pier --json ...args`, stdout parsed; throws with stderr when it fails. */
  json(args: string[]): Promise<any>;
  /** Logs in with the bootstrap token through standard input. */
  login(): Promise<CliRun>;
  stop(): Promise<void>;
}

export function runCli(bin: string, args: string[], env: Record<string, string>, input?: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

export async function startCli(options: Partial<PlatformOptions> = {}): Promise<CliHarness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pier-cli-'));
  const bin = await bundle(path.join(dir, 'bin', 'pier.cjs'));
  const configDir = path.join(dir, 'config');
  const platform = await startPlatform(options);
  const pier: CliHarness['pier'] = (args, o = {}) => runCli(bin, args, { PIER_CONFIG_DIR: configDir, ...o.env }, o.input);
  return {
    platform,
    dir: configDir,
    bin,
    pier,
    async json(args) {
      const r = await pier(['--json', ...args]);
      if (r.code !== 0) throw new Error(`pier ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      return JSON.parse(r.stdout);
    },
    login: () => pier(['login', '--api-url', platform.gatewayUrl], { input: platform.bootstrap.token + '\n' }),
    async stop() {
      await platform.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
