// What the use cases poke (ctx.builds.runner, ctx.edge.syncer), for several instances of
// compute: the build queue and the edge worker run in one of them (leaderOnly in server.ts),
// and a request may reach any. A poke acts here at once when this instance leads the loop
// (a worker that does not lead ignores it) and is sent to the others over PostgreSQL's
// NOTIFY (store/pokes.ts says why not NATS), where the leader acts on it.
import type { Knex, Logger } from '@pier/kit';
import type { BuildRunner } from './domain/builds/build-deps.ts';
import type { BuildWorker } from './domain/builds/build-worker.ts';
import type { EdgeSyncer } from './domain/edge/edge-deps.ts';
import type { EdgeWorker } from './domain/edge/edge-worker.ts';
import { PgPokes } from './store/pokes.ts';

export interface Pokes {
  runner: BuildRunner;
  syncer: EdgeSyncer;
  /** Listens for the other instances' pokes from start() to stop(). */
  listener: PgPokes;
}

export function createPokes(db: Knex, self: string, logger: Logger, builds: BuildWorker, edge: EdgeWorker): Pokes {
  const listener = new PgPokes(db, self, logger, (poke) => {
    if (poke.kind === 'builds') builds.wake();
    else if (poke.kind === 'edge') edge.poke();
    // Not running here (yet): the next pass sees its `cancel_requested`.
    else void builds.cancel(poke.buildId).then((ran) => ran || builds.wake());
  });
  return {
    listener,
    runner: {
      get leading() {
        return builds.leading;
      },
      wake: () => {
        builds.wake();
        listener.send({ kind: 'builds' });
      },
      async cancel(buildId) {
        if (await builds.cancel(buildId)) return true;
        if (builds.leading) builds.wake();
        else listener.send({ kind: 'build.cancel', buildId });
        return false;
      },
    },
    syncer: {
      poke: () => {
        edge.poke();
        listener.send({ kind: 'edge' });
      },
    },
  };
}
