// The JSON of an uptime monitor, and the zod schema that documents it in OpenAPI.
import { z } from 'zod';
import type { UptimeView } from '../domain/uptime/uptime.ts';
import { UPTIME_STATUSES } from '../domain/uptime/uptime-store-port.ts';
import { percentage } from '../domain/uptime/uptime-state.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export const uptimeSchema = z.object({
  enabled: z.boolean(),
  path: z.string().nullable(),
  interval_seconds: z.number().nullable(),
  timeout_seconds: z.number().nullable(),
  expected_status: z.object({ min: z.number(), max: z.number() }).nullable().describe('The status codes that count as up, both ends included'),
  status: z
    .enum(UPTIME_STATUSES)
    .describe('`unknown` until the first check (and while disabled); `down` after 2 failed checks in a row; `up` at the first success'),
  last_checked_at: z.string().nullable(),
  last_status_code: z.number().nullable().describe('Null when the last check got no response'),
  last_latency_ms: z.number().nullable().describe("Time to the response's headers; null when there was none"),
  last_error: z.string().nullable().describe('Why the last check failed; null when it succeeded'),
  next_check_at: z.string().nullable(),
  uptime_24h: z
    .number()
    .nullable()
    .describe('Percentage (0-100, three decimals) of successful checks over the current hour and the 23 before it; null without checks'),
  uptime_7d: z.number().nullable().describe('The same over the current hour and the 167 before it'),
  hourly_24h: z
    .array(z.object({ hour: z.string(), checks: z.number(), uptime: z.number().nullable() }))
    .describe(
      'The current hour and the 23 before it, oldest first (`hour`: its start, UTC): its checks and their uptime percentage, null without checks; empty while disabled',
    ),
  incidents: z
    .array(z.object({ started_at: z.string(), ended_at: z.string().nullable(), reason: z.string() }))
    .describe('Newest first, at most 20; `started_at` is the first failed check, `ended_at` the first success after (null while down)'),
});

export function uptimeJson(v: UptimeView): z.infer<typeof uptimeSchema> {
  const m = v.monitor;
  return {
    enabled: m !== null,
    path: m?.path ?? null,
    interval_seconds: m?.interval_seconds ?? null,
    timeout_seconds: m ? m.timeout_ms / 1000 : null,
    expected_status: m ? { min: m.expected_min, max: m.expected_max } : null,
    status: m?.status ?? 'unknown',
    last_checked_at: iso(m?.last_checked_at ?? null),
    last_status_code: m?.last_status_code ?? null,
    last_latency_ms: m?.last_latency_ms ?? null,
    last_error: m?.last_error ?? null,
    next_check_at: iso(m?.next_check_at ?? null),
    uptime_24h: v.uptime24h,
    uptime_7d: v.uptime7d,
    hourly_24h: v.hours.map((h) => ({ hour: h.hour.toISOString(), checks: h.checks, uptime: percentage(h) })),
    incidents: v.incidents.map((i) => ({ started_at: iso(i.started_at)!, ended_at: iso(i.ended_at), reason: i.reason })),
  };
}
