// Delete, pending first: the record is hidden (`deleting`) before the cluster's store is
// touched, and removed with its event only after the store let go of the values. A crash in
// between leaves it `deleting`, and the reconciler finishes it (removeDeleted).
import { crashPoint, isUuid } from '@pier/kit';
import { clusterUnavailable, secretNotFound, type SecretsContext } from './context.ts';
import { events } from './events.ts';
import type { Scope } from './records.ts';

export async function deleteSecret(ctx: SecretsContext, scope: Scope, id: string): Promise<void> {
  const record = isUuid(id) ? await ctx.store.beginDelete(scope, id) : undefined;
  if (!record) throw secretNotFound();
  try {
    await ctx.cluster.delete({ vpcId: record.vpcId, secretId: record.id });
  } catch (err) {
    ctx.log.warn({ secretId: record.id, cause: ctx.cluster.describeError(err) }, 'secret store delete failed; the secret stays');
    // If even this fails the record stays `deleting` and the reconciler finishes the delete.
    await ctx.store.revertDelete(record.id).catch(() => undefined);
    throw clusterUnavailable();
  }
  // The values are gone, the record is still `deleting`: the reconciler finishes it.
  crashPoint('secrets.delete.removed');
  await removeDeleted(ctx, record.id);
  ctx.eventsWritten();
}

/**
 * Removes a `deleting` record whose values the store no longer holds, with `secret.deleted`,
 * in one transaction; false when there was no such record. The caller tells the relay.
 */
export function removeDeleted(ctx: SecretsContext, id: string): Promise<boolean> {
  return ctx.store.transaction(async (tx) => {
    const removed = await tx.removeDeleting(id);
    if (removed) await tx.writeEvent(events.deleted(removed));
    return removed !== undefined;
  });
}
