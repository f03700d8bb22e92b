// pier events: the workspace's audit log and event stream (Owner or Admin). The newest
// events, filtered; with --follow, then each new one until Ctrl-C, resuming after the last
// event printed (Last-Event-ID) when the API restarts.
import type { Command } from 'commander';
import { unwrap, type paths } from '@pier/sdk';
import { examples, integer, run } from '../command.ts';
import type { Context } from '../context.ts';
import { CliError } from '../errors.ts';
import { followUntilInterrupted, serverSentEvents } from '../sse.ts';

const EVENTS = '/api/v1/workspaces/{workspaceID}/events' as const;
/** The largest page the API gives. */
const PAGE = 200;

type PierEvent = paths[typeof EVENTS]['get']['responses'][200]['content']['application/json']['items'][number];

interface EventsOptions {
  follow?: boolean;
  type?: string;
  resource?: string;
  actor?: string;
  since?: string;
  until?: string;
  limit?: number;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `15m`, `2h`, `7d` back from now, or an ISO 8601 instant as given (the API judges it). */
export function instantOf(when: string | undefined, now = Date.now()): string | undefined {
  if (when === undefined) return undefined;
  const m = /^(\d+)([smhd])$/.exec(when.trim());
  return m ? new Date(now - Number(m[1]) * UNITS[m[2]!]! * 1000).toISOString() : when;
}

/** Who: the e-mail and the credential (`api_key ci`), or `platform` for Pier's own changes. */
function actorText(e: PierEvent): string {
  if (!e.actor) return 'platform';
  const c = e.actor.credential;
  return `${e.actor.email ?? e.actor.user_id}${c ? ` (${c.kind}${c.name ? ` ${c.name}` : ''})` : ''}`;
}

const resourceText = (e: PierEvent) => `${e.resource.kind} ${e.resource.name ?? e.resource.id}`;

function printEvent(ctx: Context, e: PierEvent): void {
  if (ctx.out.json) process.stdout.write(`${JSON.stringify(e)}\n`);
  else ctx.out.line(`${e.occurred_at} ${e.type} ${resourceText(e)} by ${actorText(e)}${e.source_ip ? ` from ${e.source_ip}` : ''}`);
}

function query(o: EventsOptions) {
  return { type: o.type, resource_id: o.resource, actor: o.actor, since: instantOf(o.since), until: instantOf(o.until) };
}

async function list(ctx: Context, o: EventsOptions): Promise<void> {
  const client = await ctx.client();
  const workspaceID = await ctx.workspaceId();
  const wanted = o.limit ?? 50;
  const items: PierEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await unwrap(
      client.GET(EVENTS, { params: { path: { workspaceID }, query: { ...query(o), limit: Math.min(PAGE, wanted - items.length), cursor } } }),
    );
    items.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && items.length < wanted);
  ctx.out.result(items, () =>
    ctx.out.table(items, [
      { header: 'TIME', value: (e) => e.occurred_at },
      { header: 'TYPE', value: (e) => e.type },
      { header: 'RESOURCE', value: resourceText },
      { header: 'ACTOR', value: actorText },
      { header: 'SOURCE', value: (e) => e.source_ip ?? '' },
      { header: 'ID', value: (e) => e.id },
    ]),
  );
}

/** Follows until Ctrl-C; after the API restarts (a `reconnect` event) it resumes after the last event printed. */
async function follow(ctx: Context, o: EventsOptions): Promise<void> {
  const client = await ctx.client();
  const workspaceID = await ctx.workspaceId();
  let last: string | undefined;
  await followUntilInterrupted(async (signal) => {
    for (;;) {
      const body = await unwrap(
        client.GET(EVENTS, {
          params: { path: { workspaceID }, query: { ...query(o), follow: 'true' } },
          headers: { accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) },
          parseAs: 'stream',
          signal,
        }),
      );
      let restarted = false;
      for await (const e of serverSentEvents(body as ReadableStream<Uint8Array>)) {
        if (e.event === 'reconnect') restarted = true;
        else if (e.event === 'event') {
          printEvent(ctx, e.data as PierEvent);
          last = e.id ?? last;
        }
      }
      if (!restarted) throw new CliError('the event stream ended: the API closed it', 'stream_ended');
      ctx.out.note('pier: the API restarted; following again after the last event');
    }
  });
}

export function register(program: Command): void {
  examples(
    program
      .command('events')
      .description("The workspace's events, newest first: who changed what, with which credential, from where, and the platform's own changes (Owner or Admin)")
      .option('-f, --follow', 'then print each new event as it comes (stops on Ctrl-C)')
      .option('--type <type>', 'an event type (api_key.revoked) or a prefix ending in .* (service.*)')
      .option('--resource <id>', 'only events about this resource (its id)')
      .option('--actor <user id>', "only this user's changes")
      .option('--since <when>', 'from this time: ISO 8601 (2026-05-01T12:00:00Z) or a duration back from now (15m, 2h, 7d)')
      .option('--until <when>', 'before this time (same forms as --since)')
      .option('-n, --limit <n>', 'at most n events (default 50); not with --follow', integer)
      .action(
        run(async (ctx, o: EventsOptions) => {
          if (o.follow && o.limit !== undefined) throw new CliError('--limit is for the list; --follow prints every new event', 'invalid_argument', 2);
          if (o.follow) await follow(ctx, o);
          else await list(ctx, o);
        }),
      ),
    'pier events',
    'pier events --type service.* --since 2h',
    'pier events --resource 3f1c... --json | jq ".[].actor"',
    'pier events --follow --type api_key.*',
  );
}
