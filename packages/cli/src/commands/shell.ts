// pier services shell: a shell (or one command) in a running replica, over the exec
// WebSocket. On a terminal it is raw and follows the window's size; piped, stdin goes to the
// command and its end is the command's EOF. The exit status is the command's. When the API
// restarts (close code 1012), an interactive shell opens again; a command is not rerun.
import type { Command } from 'commander';
import WebSocket from 'ws';
import { PierApiError, type paths } from '@pier/sdk';
import { examples, run } from '../command.ts';
import type { Context } from '../context.ts';
import { SERVICE, service } from '../resources.ts';

const EXEC = `${SERVICE}/exec` as const;
type ExecQuery = NonNullable<paths[typeof EXEC]['get']['parameters']['query']>;

interface ShellOptions {
  replica?: string;
  /** commander's --no-tty: false when given. */
  tty?: boolean;
}

/** The exec URL: the API's own, ws(s):// for http(s)://, path parameters filled in. */
function execUrl(apiUrl: string, path: Record<string, string>, query: ExecQuery): string {
  const filled = EXEC.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(path[name]!));
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) for (const one of [value].flat()) if (one !== undefined) q.append(key, String(one));
  return `${apiUrl.replace(/\/+$/, '').replace(/^http/, 'ws')}${filled}?${q}`;
}

/** Refusals of the handshake (403, 409 ...) carry the API's JSON error, as any call does. */
function refusal(status: number, text: string): PierApiError {
  try {
    return new PierApiError(status, JSON.parse(text));
  } catch {
    return new PierApiError(status, { error: `${status} ${text}`.trim(), code: `http_${status}` });
  }
}

/** The API's close code when it restarts (kit's drain.ts): the session ended, the API is there again in a moment. */
const RECONNECT_CLOSE_CODE = 1012;

interface SessionEnd {
  exitCode: number | null;
  closeCode: number;
  problem?: string;
}

/** One exec session, from the handshake to the socket's close. */
function session(url: string, token: string, tty: boolean, size: () => { cols: number; rows: number }): Promise<SessionEnd> {
  const stdin = process.stdin;
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  return new Promise<SessionEnd>((resolve, reject) => {
    let exitCode: number | null = null;
    let problem: string | undefined;
    const onResize = () => ws.send(JSON.stringify({ type: 'resize', ...size() }));
    const onData = (d: Buffer) => ws.send(d, { binary: true });
    // Without a terminal, the end of what was piped in is the command's EOF.
    const onEnd = () => ws.readyState === ws.OPEN && ws.send(JSON.stringify({ type: 'eof' }));
    const restore = () => {
      if (tty) {
        stdin.setRawMode(false);
        process.stdout.off('resize', onResize);
      }
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    };
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => reject(refusal(res.statusCode ?? 0, text)));
    });
    ws.on('error', (err) => reject(new PierApiError(0, { error: `cannot reach the Pier API (${err.message})`, code: 'unreachable' })));
    ws.on('open', () => {
      if (tty) {
        stdin.setRawMode(true);
        process.stdout.on('resize', onResize);
      }
      stdin.on('data', onData);
      stdin.on('end', onEnd);
      stdin.resume();
    });
    ws.on('message', (data: Buffer, isBinary) => {
      if (isBinary) return void process.stdout.write(data);
      const message = JSON.parse(data.toString('utf8')) as { type: string; code?: number | null; message?: string };
      if (message.type === 'exit') exitCode = message.code ?? null;
      if (message.type === 'error') problem = message.message;
    });
    ws.on('close', (closeCode) => {
      restore();
      resolve({ exitCode, closeCode, problem });
    });
  });
}

async function shell(ctx: Context, ref: string, command: string[], o: ShellOptions): Promise<void> {
  const { path } = await service(ctx, ref);
  const { credentials } = await ctx.session();
  const tty = o.tty !== false && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const size = () => ({ cols: process.stdout.columns || 80, rows: process.stdout.rows || 24 });
  const interactive = tty && command.length === 0;
  // After a restart, the API may take a few seconds to take connections again: a reconnect
  // is tried up to ten times, a second apart (a first connection that fails fails at once).
  let reconnecting = 0;
  for (;;) {
    const query: ExecQuery = { command: command.length ? command : undefined, replica: o.replica, tty: tty ? 'true' : 'false', ...(tty ? size() : {}) };
    let end: SessionEnd;
    try {
      end = await session(execUrl(credentials.api_url, path, query), credentials.token, tty, size);
    } catch (err) {
      const passing = err instanceof PierApiError && (err.status === 0 || err.status === 503);
      if (reconnecting === 0 || reconnecting > 10 || !passing) throw err;
      reconnecting++;
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    const nl = tty ? '\r\n' : '\n';
    if (end.exitCode === null && end.closeCode === RECONNECT_CLOSE_CODE) {
      // The API restarted under the session (an upgrade). A shell is opened again; a
      // command is not run twice: its status is unknown.
      if (interactive) {
        process.stderr.write(`${nl}pier: the API restarted; opening a new shell (the previous one ended)${nl}`);
        reconnecting = 1;
        continue;
      }
      process.stderr.write(`${nl}pier: the API restarted while the command ran; it may or may not have finished${nl}`);
      process.exitCode = 1;
      return;
    }
    if (end.problem) process.stderr.write(`${tty ? '\r\n' : ''}pier: ${end.problem}\n`);
    process.exitCode = end.exitCode ?? 1;
    return;
  }
}

export function register(services: Command): void {
  examples(
    services
      .command('shell <service> [command...]')
      .description('A shell in a running replica (Owner or Admin); with a command, runs it there and exits with its status')
      .option('--replica <replica>', 'which replica (as in logs; default the first running one)')
      .option('--no-tty', 'no terminal, even when this is one (stdin is piped to the command)')
      .action(run(async (ctx, ref: string, command: string[], o: ShellOptions) => shell(ctx, ref, command, o))),
    'pier services shell web',
    'pier services shell web -- ls -la /srv',
    'echo "select 1" | pier services shell api -- psql "$DATABASE_URL"',
  );
}
