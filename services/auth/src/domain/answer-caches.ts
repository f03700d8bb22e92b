import type { AuthStore } from './store-port.ts';

/**
 * The gateways' caches of Authenticate answers (kit's auth-epoch.ts). A change that can
 * alter an answer raises the auth epoch in its own transaction; `invalidated(epoch)`
 * settles once no cache can still answer from before that epoch, and only then may the
 * change be reported done: revocation, downgrade and removal have no grace.
 */
export interface AnswerCaches {
  invalidated(epoch: number): Promise<void>;
}

/** The part of the context a change of answers uses (context.ts imports this file, so not the whole of it). */
interface ChangingContext {
  store: AuthStore;
  caches: AnswerCaches;
  eventsWritten(): void;
}

/** Runs `fn` in a transaction that raises the auth epoch, and returns once every cache has let go of older answers. */
export async function changingAnswers<T>(ctx: ChangingContext, fn: (tx: AuthStore) => Promise<T>): Promise<T> {
  let epoch = 0;
  const result = await ctx.store.transaction(async (tx) => {
    const r = await fn(tx);
    // Last, so the epoch row (one for the whole schema) is locked only for the commit.
    epoch = await tx.raiseAuthEpoch();
    return r;
  });
  ctx.eventsWritten();
  await ctx.caches.invalidated(epoch);
  return result;
}
