// `--wait`: polls a resource until its status settles, showing progress with the elapsed
// time — a spinner on a terminal, one line per status change otherwise — and ends with
// the final status. Reaching a failure status (or the timeout) is a failure of the command.
import { CliError } from './errors.ts';

export interface WaitOptions<T> {
  /** What is awaited, for the progress line ("service web"). */
  what: string;
  read: () => Promise<T>;
  status: (value: T) => string;
  /** Statuses that end the wait successfully / with a failure. */
  done: string[];
  failed: string[];
  /** Why it failed, when the record says. */
  reason?: (value: T) => string | null | undefined;
  timeoutSeconds: number;
  intervalMs?: number;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export async function waitFor<T>(o: WaitOptions<T>, stderr: NodeJS.WriteStream = process.stderr): Promise<T> {
  const started = Date.now();
  const tty = Boolean(stderr.isTTY);
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)}s`;
  let frame = 0;
  let last = '';
  let current = '';
  const spinner = tty
    ? setInterval(() => {
        stderr.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${o.what}: ${current} (${elapsed()})`);
      }, 100)
    : undefined;
  try {
    for (;;) {
      const value = await o.read();
      current = o.status(value);
      if (!tty && current !== last) stderr.write(`${o.what}: ${current} (${elapsed()})\n`);
      last = current;
      if (o.done.includes(current) || o.failed.includes(current)) {
        if (tty) stderr.write(`\r\x1b[2K${o.done.includes(current) ? '✓' : '✗'} ${o.what}: ${current} (${elapsed()})\n`);
        if (o.failed.includes(current)) {
          const why = o.reason?.(value);
          throw new CliError(`${o.what} is ${current}${why ? `: ${why}` : ''}`, `ended_${current}`);
        }
        return value;
      }
      if (Date.now() - started > o.timeoutSeconds * 1000) {
        if (tty) stderr.write('\n');
        throw new CliError(`${o.what} is still ${current} after ${o.timeoutSeconds}s (--timeout)`, 'wait_timeout');
      }
      await new Promise((r) => setTimeout(r, o.intervalMs ?? 1000));
    }
  } finally {
    if (spinner) clearInterval(spinner);
  }
}

/** Waits for a deletion to finish: until `read` finds nothing (404) or the record reads `deleted`. */
export function waitUntilDeleted(what: string, read: () => Promise<{ status: string } | undefined>, timeoutSeconds: number) {
  return waitFor({
    what,
    read: async () => (await read()) ?? { status: 'deleted' },
    status: (x) => x.status,
    done: ['deleted'],
    failed: [],
    timeoutSeconds,
  });
}
