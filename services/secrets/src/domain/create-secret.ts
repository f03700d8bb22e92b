// Create, pending first: the record is written `creating` (invisible to the API, holding the
// name) before the cluster's store is touched, and becomes `ready` with its event only once
// the store holds the values. Whatever a crash interrupts is left `creating`, where the
// reconciler (or a keyed retry, takeUpCreate) finds it and undoes it.
import { crashPoint } from '@pier/kit';
import { clusterUnavailable, type SecretsContext } from './context.ts';
import { events } from './events.ts';
import type { Scope, SecretRecord } from './records.ts';
import type { CreateSecretInput } from './secret-rules.ts';

export async function createSecret(ctx: SecretsContext, scope: Scope, input: CreateSecretInput): Promise<SecretRecord> {
  const keys = Object.keys(input.values).sort();
  const pending = await ctx.store.insertCreating(scope, input.name, keys);
  const ref = { ...scope, secretId: pending.id, name: pending.name };
  try {
    await ctx.cluster.apply(ref, input.values);
  } catch (err) {
    ctx.log.warn({ secretId: pending.id, cause: ctx.cluster.describeError(err) }, 'secret store write failed; undoing the create');
    await undoCreate(ctx, pending);
    throw clusterUnavailable();
  }
  // The store holds the values, the record is still `creating`: the reconciler undoes it.
  crashPoint('secrets.create.stored');
  const ready = await ctx.store.transaction(async (tx) => {
    const record = await tx.markReady(pending.id);
    if (record) await tx.writeEvent(events.created(record));
    return record;
  });
  if (!ready) {
    // The reconciler took this record for abandoned and undid it: take the values back.
    await ctx.cluster.delete(ref).catch(() => undefined);
    throw clusterUnavailable();
  }
  // Committed, the caller not answered: the secret stands (a retry is a 409 naming it).
  crashPoint('secrets.create.committed');
  ctx.eventsWritten();
  return ready;
}

/**
 * The secret a keyed create whose first attempt died had begun (see kit's idempotency):
 * its record once ready; one left `creating` is undone now, as the reconciler would after
 * its grace, so the retry can take the name again.
 */
export async function takeUpCreate(ctx: SecretsContext, scope: Scope, id: string): Promise<SecretRecord | undefined> {
  const ready = await ctx.store.get(scope, id);
  if (ready) return ready;
  try {
    await ctx.cluster.delete({ vpcId: scope.vpcId, secretId: id });
  } catch (err) {
    ctx.log.warn({ secretId: id, cause: ctx.cluster.describeError(err) }, 'secret store unreachable; cannot undo a dead create yet');
    throw clusterUnavailable();
  }
  await ctx.store.removeCreating(id);
  return undefined;
}

async function undoCreate(ctx: SecretsContext, pending: SecretRecord): Promise<void> {
  // The write may have landed before failing (a timeout): remove whatever is there.
  // If the store stays unreachable the record goes anyway, and the reconciler's sweep
  // removes any object left without a record.
  await ctx.cluster.delete({ vpcId: pending.vpcId, secretId: pending.id }).catch(() => undefined);
  // If the database is gone too, the record stays `creating` (invisible) for the reconciler.
  await ctx.store.removeCreating(pending.id).catch(() => undefined);
}
