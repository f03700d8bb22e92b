import { isUuid, type Page, type PageRequest, type ServerSentEvent } from '@pier/kit';
import type { EventsContext } from './context.ts';
import type { EventFilters, StoredEvent } from './records.ts';

/** Events read per query while a follower catches up. */
const FOLLOW_BATCH = 200;

export function listEvents(ctx: EventsContext, workspaceId: string, filters: EventFilters, page: PageRequest): Promise<Page<StoredEvent>> {
  return ctx.store.list(workspaceId, filters, page);
}

/**
 * Where a follower starts: after the event `lastEventId` names (a reconnecting client: it
 * gets everything stored since, in storage order, so nothing is missed or repeated), or
 * after the last event stored now. An id that is not one of the workspace's stored events
 * (trimmed, or never one) starts from now, as without one.
 */
export async function followStart(ctx: EventsContext, workspaceId: string, lastEventId: string | undefined): Promise<number> {
  const id = lastEventId?.trim();
  if (id && isUuid(id)) {
    const seq = await ctx.store.seqOf(workspaceId, id.toLowerCase());
    if (seq !== undefined) return seq;
  }
  return ctx.store.lastSeq();
}

/**
 * The workspace's events from `fromSeq` on, as server-sent events, until `signal` aborts.
 * Storage order is commit order (one consumer stores at a time, a batch per transaction),
 * so reading "after the last seq sent" never skips an event committed later with a lower seq.
 */
export async function* followEvents(
  ctx: EventsContext,
  workspaceId: string,
  filters: EventFilters,
  fromSeq: number,
  signal: AbortSignal,
  shape: (e: StoredEvent) => unknown,
): AsyncIterable<ServerSentEvent> {
  let seq = fromSeq;
  while (!signal.aborted) {
    const batch = await ctx.store.after(workspaceId, filters, seq, FOLLOW_BATCH);
    for (const e of batch) {
      seq = e.seq;
      yield { id: e.id, event: 'event', data: shape(e) };
    }
    if (batch.length < FOLLOW_BATCH) await ctx.waitForEvents(ctx.followPollMs, signal);
  }
}
