import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { ParentDeath } from './parent-death.ts';

export interface ServiceProcessOptions {
  /** Where each line the service prints goes (default: stdout, prefixed with its name). */
  onLine?: (service: string, line: string, stream: 'stdout' | 'stderr') => void;
  /** Makes the service stop when the launcher dies, even by SIGKILL. */
  parentDeath?: ParentDeath;
  /** Extra node flags (the benchmark's --cpu-prof). */
  nodeArgs?: string[];
  /** The entry is JavaScript already (a bundle of deploy/platform/bundle.ts): plain node, without tsx's loader. */
  javascript?: boolean;
  /** Told when the process ends, however it ends (a benchmark says so at once, not at its end). */
  onExit?: (service: string, code: number | null, signal: NodeJS.Signals | null) => void;
}

const printPrefixed = (service: string, line: string) => process.stdout.write(`[${service}] ${line}\n`);

/**
 * One Pier service as a child process: `node --import tsx services/<name>/src/main.ts`
 * (tsx's loader in the same process, so signals reach the service itself, not a
 * wrapper). Its own process group: a Ctrl-C in the terminal reaches only the launcher,
 * which stops the services in order. Output goes line by line to `onLine`.
 */
export class ServiceProcess {
  private child?: ChildProcess;
  private tail: string[] = [];

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: NodeJS.ProcessEnv,
    readonly healthUrl: string,
    private readonly options: ServiceProcessOptions = {},
  ) {}

  start(cwd: string): void {
    const args = [...(this.options.nodeArgs ?? []), ...(this.options.javascript ? [] : ['--import', 'tsx']), this.entry];
    const [cmd, argv] = this.options.parentDeath?.wrap(process.execPath, args, 'SIGTERM') ?? [process.execPath, args];
    const child = spawn(cmd, argv, { cwd, env: this.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.on('exit', (code, signal) => this.options.onExit?.(this.name, code, signal));
    const onLine = this.options.onLine ?? printPrefixed;
    for (const [stream, name] of [
      [child.stdout!, 'stdout'],
      [child.stderr!, 'stderr'],
    ] as const) {
      let partial = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          onLine(this.name, line, name);
          this.tail.push(line);
          if (this.tail.length > 20) this.tail.shift();
        }
      });
    }
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get exited(): boolean {
    return !this.child || this.child.exitCode !== null || this.child.signalCode !== null;
  }

  lastLines(): string {
    return this.tail.join('\n');
  }

  /** Polls /healthz until it answers 200; fails as soon as the process exits. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.exited)
        throw new Error(`${this.name} exited during start-up (exit code ${this.child?.exitCode ?? this.child?.signalCode}); its output is above`);
      try {
        const res = await fetch(this.healthUrl, { signal: AbortSignal.timeout(1000) });
        if (res.ok) return;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error(`${this.name} did not become healthy at ${this.healthUrl} within ${timeoutMs / 1000}s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGTERM, then SIGKILL if it has not stopped within `graceMs`. */
  stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  /** Last resort when the launcher itself is exiting: no waiting possible. */
  killNow(): void {
    if (!this.exited) this.child?.kill('SIGKILL');
  }
}

export function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(true));
    srv.listen(port, host, () => srv.close(() => resolve(false)));
  });
}
