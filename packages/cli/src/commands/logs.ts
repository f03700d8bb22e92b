// pier services logs: what a service printed. The recent lines of its replicas; with
// --follow, then each new line until Ctrl-C (server-sent events); with --history, the
// stored lines of a time range, page after page.
import type { Command } from 'commander';
import { LogResume, unwrap, type paths } from '@pier/sdk';
import { examples, integer, run } from '../command.ts';
import type { Context } from '../context.ts';
import { CliError } from '../errors.ts';
import { service, SERVICE } from '../resources.ts';
import { followUntilInterrupted, serverSentEvents } from '../sse.ts';

const LOGS = `${SERVICE}/logs` as const;
const HISTORY = `${SERVICE}/logs/history` as const;
/** The largest page the API gives. */
const PAGE = 5000;

/** A line as the API answers it. */
type Line = paths[typeof LOGS]['get']['responses'][200]['content']['application/json']['items'][number];

interface LogsOptions {
  follow?: boolean;
  since?: string;
  replica?: string;
  limit?: number;
  history?: boolean;
  start?: string;
  end?: string;
  q?: string;
}

/** One line for people: time, replica (and the stream when it is stderr), the text. */
function printLine(ctx: Context, l: Line): void {
  ctx.out.line(`${l.timestamp} [${l.replica}${l.stream === 'stderr' ? ' stderr' : ''}] ${l.message}`);
}

function usage(message: string): CliError {
  return new CliError(message, 'invalid_argument', 2);
}

function checkOptions(o: LogsOptions): void {
  if (o.history) {
    if (o.follow) throw usage('--follow reads new lines as they come; it does not go with --history');
    if (o.since) throw usage('with --history, the range is --start and --end (--since is for recent lines)');
  } else {
    for (const [flag, value] of [
      ['--start', o.start],
      ['--end', o.end],
      ['--q', o.q],
    ] as const)
      if (value !== undefined) throw usage(`${flag} needs --history`);
  }
}

/**
 * Follows until Ctrl-C. When the API restarts (an upgrade) its stream ends with a
 * `reconnect` event: the follow starts again from the last line printed, and lines printed
 * already are not printed twice (the SDK's retries wait for the API to take connections).
 */
async function follow(ctx: Context, ref: string, o: LogsOptions): Promise<void> {
  const { client, path } = await service(ctx, ref);
  // Where a resumed follow starts, and which lines of that instant were printed already.
  const printed = new LogResume();
  await followUntilInterrupted(async (signal) => {
    for (let since = o.since; ; since = printed.since ?? o.since) {
      const body = await unwrap(
        client.GET(LOGS, {
          params: { path, query: { follow: 'true', since, replica: o.replica, limit: o.limit } },
          headers: { accept: 'text/event-stream' },
          parseAs: 'stream',
          signal,
        }),
      );
      let restarted = false;
      for await (const e of serverSentEvents(body as ReadableStream<Uint8Array>)) {
        if (e.event === 'reconnect') restarted = true;
        else if (e.event === 'dropped') ctx.out.note(`pier: ${(e.data as { count: number }).count} lines dropped (this reader fell behind)`);
        else if (e.event === 'line') {
          const l = e.data as Line;
          if (!printed.fresh(l)) continue;
          if (ctx.out.json) process.stdout.write(`${JSON.stringify(l)}\n`);
          else printLine(ctx, l);
        }
      }
      if (!restarted) throw new CliError('the log stream ended: the API closed it', 'stream_ended');
      ctx.out.note('pier: the API restarted; following again from the last line');
    }
  });
}

async function recent(ctx: Context, ref: string, o: LogsOptions): Promise<void> {
  const { client, path } = await service(ctx, ref);
  const { items } = await unwrap(client.GET(LOGS, { params: { path, query: { since: o.since, replica: o.replica, limit: o.limit } } }));
  ctx.out.result(items, () => items.forEach((l) => printLine(ctx, l)));
}

async function history(ctx: Context, ref: string, o: LogsOptions): Promise<void> {
  const { client, path } = await service(ctx, ref);
  const wanted = o.limit ?? Infinity;
  const all: Line[] = [];
  let cursor: string | undefined;
  let printed = 0;
  do {
    const page = await unwrap(
      client.GET(HISTORY, {
        params: { path, query: { start: o.start, end: o.end, q: o.q, replica: o.replica, limit: Math.min(PAGE, wanted - printed), cursor } },
      }),
    );
    for (const l of page.items) {
      // People see lines as pages come; scripts get one array at the end.
      if (ctx.out.json) all.push(l);
      else printLine(ctx, l);
      printed++;
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor && printed < wanted);
  if (ctx.out.json) ctx.out.result(all, () => undefined);
}

export function register(services: Command): void {
  examples(
    services
      .command('logs <service>')
      .description("What the service's replicas printed: the recent lines (--follow: then each new one until Ctrl-C), or --history over a time range")
      .option('-f, --follow', 'keep printing new lines as they come (stops on Ctrl-C)')
      .option('--since <when>', 'recent lines from this time: ISO 8601 (2025-05-01T12:00:00Z) or a duration back from now (15m, 2h)')
      .option('--replica <replica>', 'one replica only: its index on Docker (0, 1, ...), its pod name on Kubernetes')
      .option('-n, --limit <n>', 'recent: the last n lines (1-5000, default 100); history: at most n lines (default all in the range)', integer)
      .option('--history', 'stored lines of a time range (kept for the retention, 7 days by default), oldest first')
      .option('--start <when>', 'history from (default: an hour before --end)')
      .option('--end <when>', 'history until (default: now)')
      .option('--q <text>', 'history: only lines holding this text (case-sensitive)')
      .action(
        run(async (ctx, ref: string, o: LogsOptions) => {
          checkOptions(o);
          if (o.history) await history(ctx, ref, o);
          else if (o.follow) await follow(ctx, ref, o);
          else await recent(ctx, ref, o);
        }),
      ),
    'pier services logs web',
    'pier services logs web --follow --since 15m',
    'pier services logs web --replica 1 --limit 500',
    'pier services logs web --history --start 2025-05-01T00:00:00Z --end 2025-05-02T00:00:00Z --q "timeout"',
    'pier services logs web --history --start 6h --json | jq -r ".[].message"',
  );
}
