// Reads ask the cluster: one batched observation per list (or per VPC for the
// reconciler), then what changed is stored with its event and the cluster's truth returned.
import type { Page, PageRequest } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import { resync } from './status.ts';
import { events } from './events.ts';
import { findDatabase, type DatabasesContext, type Scope } from './context.ts';

/**
 * Resyncs `records` (all of one VPC) with the cluster. Databases being deleted are the
 * teardown's to settle, and ones with a change in flight (a container being recreated
 * reads as absent for a moment) keep their status until the change is committed.
 */
export async function resynced(ctx: DatabasesContext, vpcId: string, records: DatabaseRecord[]): Promise<DatabaseRecord[]> {
  const judged = records.filter((r) => r.status !== 'deleting' && r.status !== 'deleted' && !r.pendingChange && !ctx.locks.busy(r.id));
  if (judged.length === 0) return records;
  const seen = await ctx.cluster.observe(
    vpcId,
    judged.map((r) => r.id),
  );
  const now = ctx.now();
  const changes = judged.flatMap((r) => {
    const change = resync(r, seen.get(r.id) ?? { phase: 'absent' }, now, ctx.deadlines.provisionMs);
    return change ? [{ record: r, change }] : [];
  });
  if (changes.length === 0) return records;
  const updated = new Map<string, DatabaseRecord>();
  await ctx.store.transaction(async (tx) => {
    for (const { record, change } of changes) {
      // Only the writer that still sees the old status moves it: concurrent reads emit one event.
      const next = await tx.compareAndSetStatus(record.id, record.status, change.status, change.reason);
      if (!next) continue;
      updated.set(record.id, next);
      if (next.status !== record.status) await tx.event(events.statusChanged(next, record.status));
    }
  });
  ctx.eventsWritten();
  return records.map((r) => updated.get(r.id) ?? r);
}

export async function listDatabases(ctx: DatabasesContext, scope: Scope, page: PageRequest): Promise<Page<DatabaseRecord>> {
  const stored = await ctx.store.list(scope.vpcId, page);
  return { items: await resynced(ctx, scope.vpcId, stored.items), nextCursor: stored.nextCursor };
}

export async function getDatabase(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  const [db] = await resynced(ctx, scope.vpcId, [await findDatabase(ctx, scope, id)]);
  return db!;
}

/** Live databases of a VPC, for auth's refusal to delete a VPC that still holds some. */
export function countDatabases(ctx: DatabasesContext, vpcId: string): Promise<number> {
  return ctx.store.countLive(vpcId);
}
