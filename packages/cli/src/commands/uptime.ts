// pier services uptime: uptime monitoring of a web service — its state, uptime over 24
// hours and 7 days and recent incidents (show), turning it on or changing its settings
// (enable), and off (disable).
import { type Command, InvalidArgumentError } from 'commander';
import { unwrap, type paths } from '@pier/sdk';
import { examples, group, integer, run } from '../command.ts';
import type { Context } from '../context.ts';
import { service, SERVICE } from '../resources.ts';

const UPTIME = `${SERVICE}/uptime` as const;

type Monitor = paths[typeof UPTIME]['get']['responses'][200]['content']['application/json'];

interface EnableOptions {
  path?: string;
  interval?: number;
  timeout?: number;
  expect?: { min: number; max: number };
}

/** `200-399` or a single code `204`: the status codes that count as up. */
export function statusRange(value: string): { min: number; max: number } {
  const m = /^(\d{3})(?:-(\d{3}))?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('a status code (204) or a range of them (200-399)');
  return { min: Number(m[1]), max: Number(m[2] ?? m[1]) };
}

/** Seconds, fractions allowed (0.5). */
function seconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError('a number of seconds, such as 10 or 0.5');
  return Number(value);
}

const percent = (v: number | null) => (v === null ? null : `${v}%`);

/** The 24 hours oldest first, one character each: █ all up, ▄ some checks failed, ▁ none passed, · no checks. */
const hourBars = (hours: Monitor['hourly_24h']) => hours.map((h) => (h.uptime === null ? '·' : h.uptime === 100 ? '█' : h.uptime === 0 ? '▁' : '▄')).join('');

function show(ctx: Context, m: Monitor): void {
  if (!m.enabled) {
    ctx.out.line('Uptime monitoring is off.');
    return;
  }
  ctx.out.fields([
    ['status', m.status],
    ['check', `GET ${m.path} every ${m.interval_seconds} s (timeout ${m.timeout_seconds} s, up on ${m.expected_status!.min}-${m.expected_status!.max})`],
    ['last check', m.last_checked_at],
    ['last result', m.last_error ?? (m.last_status_code === null ? null : `${m.last_status_code} in ${m.last_latency_ms} ms`)],
    ['next check', m.next_check_at],
    ['uptime 24h', percent(m.uptime_24h)],
    ['by hour', `${hourBars(m.hourly_24h)}  (oldest first; █ up, ▄ some checks failed, ▁ down, · no checks)`],
    ['uptime 7d', percent(m.uptime_7d)],
  ]);
  ctx.out.line();
  ctx.out.table(
    m.incidents,
    [
      { header: 'STARTED', value: (i) => i.started_at },
      { header: 'ENDED', value: (i) => i.ended_at ?? 'ongoing' },
      { header: 'REASON', value: (i) => i.reason },
    ],
    'No incidents.',
  );
}

export function register(services: Command): void {
  const uptime = group(services, 'uptime', 'Uptime monitoring of a web service: checks of its public URL, incidents, uptime percentages');

  examples(
    uptime
      .command('show <service>')
      .description('The monitor: state, last check, uptime over 24 hours and 7 days, incidents (newest first)')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          const m = await unwrap(client.GET(UPTIME, { params: { path } }));
          ctx.out.result(m, () => show(ctx, m));
        }),
      ),
    'pier services uptime show web',
  );

  examples(
    uptime
      .command('enable <service>')
      .description('Check the service every interval (on an enabled monitor: replace its settings; state and incidents stay)')
      .option('--path <path>', 'the path requested (default /)')
      .option('--interval <seconds>', 'seconds between checks, 30-3600 (default 60)', integer)
      .option('--timeout <seconds>', 'how long a check waits, shorter than the interval (default 10)', seconds)
      .option('--expect <range>', 'status codes that count as up: 200-399 (default) or one code', statusRange)
      .action(
        run(async (ctx, ref: string, o: EnableOptions) => {
          const { client, path } = await service(ctx, ref);
          const body = { path: o.path, interval_seconds: o.interval, timeout_seconds: o.timeout, expected_status: o.expect };
          const m = await unwrap(client.POST(UPTIME, { params: { path }, body }));
          ctx.out.result(m, () =>
            ctx.out.line(
              `Uptime monitoring of ${ref}: GET ${m.path} every ${m.interval_seconds} s (timeout ${m.timeout_seconds} s, up on ${m.expected_status!.min}-${m.expected_status!.max}).`,
            ),
          );
        }),
      ),
    'pier services uptime enable web',
    'pier services uptime enable web --path /healthz --interval 30 --timeout 5 --expect 200-299',
  );

  examples(
    uptime
      .command('disable <service>')
      .description('Stop checking the service (its incidents and uptime history are forgotten)')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          await unwrap(client.DELETE(UPTIME, { params: { path } }));
          ctx.out.result({ enabled: false }, () => ctx.out.line(`Uptime monitoring of ${ref} is off.`));
        }),
      ),
    'pier services uptime disable web',
  );
}
