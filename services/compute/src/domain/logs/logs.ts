// Service logs: the recent lines of the current replicas (read from the cluster), the same
// followed live (then from the collector's feed), and history (from the store).
import { InputError, type Page } from '@pier/kit';
import { findService, refOf, type ComputeContext } from '../context.ts';
import type { LogLine } from './log-port.ts';
import { DAY_MS } from './log-writer.ts';
import { parseInstant } from './log-query.ts';
import type { Scope, Service } from '../records.ts';

export interface RecentQuery {
  limit: number;
  replica?: string;
  /** ISO 8601 or a duration back from now. */
  since?: string;
}

export interface HistoryRequest {
  start?: string;
  end?: string;
  q?: string;
  replica?: string;
  limit: number;
  cursor?: string;
}

export type FollowEvent = { type: 'line'; line: LogLine } | { type: 'dropped'; count: number };

const HOUR_MS = 3_600_000;

interface Recent {
  lines: LogLine[];
  /** The newest line sent per replica unit: where the live part takes over. */
  newest: Map<string, string>;
}

async function recentOf(ctx: ComputeContext, s: Service, q: RecentQuery): Promise<Recent> {
  const since = q.since === undefined ? undefined : parseInstant(q.since, 'since', ctx.now());
  const { source } = ctx.logs;
  const replicas = (await source.serviceReplicas(refOf(s))).filter((r) => q.replica === undefined || r.replica === q.replica);
  const perReplica = await Promise.all(replicas.map(async (r) => ({ key: r.key, lines: await source.recent(r, { tail: q.limit, since }) })));
  const newest = new Map<string, string>();
  for (const { key, lines } of perReplica)
    if (lines.length)
      newest.set(
        key,
        lines.reduce((m, l) => (l.ts > m ? l.ts : m), ''),
      );
  // Each replica's lines are in order already; a stable sort merges them by time.
  const lines = perReplica
    .flatMap((p) => p.lines)
    .sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0))
    .slice(-q.limit);
  return { lines, newest };
}

/** The last `limit` lines of the service's replicas now in the cluster, oldest first. */
export async function recentLogs(ctx: ComputeContext, scope: Scope, serviceId: string, q: RecentQuery): Promise<LogLine[]> {
  const s = await findService(ctx, scope, serviceId);
  return (await recentOf(ctx, s, q)).lines;
}

/**
 * The recent lines, then every new one as it is collected, until `signal` aborts. Subscribed
 * before the recent lines are read (on this instance and, through the feed's fanout, with
 * the instance that collects), so nothing printed in between is missed; a live line a
 * replica's recent lines already held is not sent twice.
 */
export async function followLogs(
  ctx: ComputeContext,
  scope: Scope,
  serviceId: string,
  q: RecentQuery,
  signal: AbortSignal,
): Promise<AsyncIterable<FollowEvent>> {
  const s = await findService(ctx, scope, serviceId);
  const sub = await ctx.logs.feed.subscribe(s.id, q.replica);
  let recent: Recent;
  try {
    recent = await recentOf(ctx, s, q);
  } catch (err) {
    sub.close();
    throw err;
  }
  return (async function* (): AsyncGenerator<FollowEvent> {
    try {
      for (const line of recent.lines) yield { type: 'line', line };
      for (let batch = await sub.next(signal); batch; batch = await sub.next(signal)) {
        if (batch.dropped) yield { type: 'dropped', count: batch.dropped };
        for (const { key, line } of batch.lines) {
          const seam = recent.newest.get(key);
          if (seam !== undefined) {
            if (line.ts <= seam) continue;
            recent.newest.delete(key);
          }
          yield { type: 'line', line };
        }
      }
    } finally {
      sub.close();
    }
  })();
}

/** Stored lines of a time range (default the last hour), oldest first, never older than the retention. */
export async function logHistory(ctx: ComputeContext, scope: Scope, serviceId: string, q: HistoryRequest): Promise<Page<LogLine>> {
  const now = ctx.now();
  const end = q.end === undefined ? now : parseInstant(q.end, 'end', now);
  const start = q.start === undefined ? new Date(end.getTime() - HOUR_MS) : parseInstant(q.start, 'start', now);
  if (start >= end) throw new InputError('start: must be before end', 'invalid_request', { field: 'start' });
  const s = await findService(ctx, scope, serviceId);
  const kept = new Date(now.getTime() - ctx.logs.retentionDays * DAY_MS);
  return ctx.logs.store.history({
    serviceId: s.id,
    start: start < kept ? kept : start,
    end,
    q: q.q,
    replica: q.replica,
    limit: q.limit,
    cursor: q.cursor,
  });
}
