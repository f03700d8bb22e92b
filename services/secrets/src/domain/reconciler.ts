// Finishes what a crash interrupted (kit's Reconciler runs the loop, the grace and the
// sweep's cadence; this file gives secrets' steps):
//
//   record left `creating`        undone: its values cannot be recovered from our side, and the
//                                 caller saw no 201, so the store object and the record go
//   record left `deleting`        finished: the store object goes, then the record with `secret.deleted`
//   store object without a record deleted (a create whose undo could not reach the store)
//   temporary file of a cut write deleted once older than the grace (docker's store)
//
// Secrets takes no per-secret lock and may run beside another instance, so a fresh
// process cannot tell a sibling's request in flight from a crash's leftover: the grace
// holds at start-up too (`soleInstance: false`), and a keyed retry settles its own
// leftover at once (takeUpCreate).
import { Reconciler, pendingStep, type ReconcileTimes, type SettleEach } from '@pier/kit';
import type { SecretsContext } from './context.ts';
import type { SecretRecord } from './records.ts';
import { removeDeleted } from './delete-secret.ts';

export function secretsReconciler(ctx: SecretsContext, times: ReconcileTimes): Reconciler {
  const { store, cluster } = ctx;
  const left = async (state: SecretRecord['state'], before: Date) => (await store.stalePending(before)).filter((r) => r.state === state);
  const removeValues = (r: SecretRecord) => cluster.delete({ vpcId: r.vpcId, secretId: r.id });
  return new Reconciler(
    {
      steps: [
        pendingStep({
          what: 'undo a create',
          pending: (before) => left('creating', before),
          key: (r) => r.id,
          settle: async (r) => {
            await removeValues(r);
            return store.removeCreating(r.id);
          },
        }),
        pendingStep({
          what: 'finish a delete',
          pending: (before) => left('deleting', before),
          key: (r) => r.id,
          settle: async (r) => {
            await removeValues(r);
            const removed = await removeDeleted(ctx, r.id);
            if (removed) ctx.eventsWritten();
            return removed;
          },
        }),
      ],
      sweep: (each) => sweep(ctx, each, times.graceMs),
    },
    {
      service: 'secrets',
      resources: 'secrets',
      log: ctx.log,
      now: () => ctx.now(),
      soleInstance: false,
      // A store's failure may echo what it was sent: only its description is logged.
      describe: (err) => ({ cause: cluster.describeError(err) }),
      ...times,
    },
  );
}

async function sweep(ctx: SecretsContext, each: SettleEach, graceMs: number): Promise<number> {
  const { store, cluster, log } = ctx;
  // What a write cut short left beside the objects (sealed values under a temporary name).
  const strays = (await cluster.removeStrays?.(graceMs)) ?? 0;
  if (strays > 0) log.info({ strays }, 'removed temporary files an interrupted store write left');
  const objects = await cluster.list();
  if (objects.length === 0) return 0;
  const known = await store.existingIds(objects.map((o) => o.secretId));
  return each(
    'sweep an orphan',
    objects.filter((o) => !known.has(o.secretId)),
    (o) => o.secretId,
    (o) => cluster.delete(o),
  );
}
