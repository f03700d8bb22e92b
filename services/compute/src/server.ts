import { KeyedMutex, startService, type RunningService } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexComputeStore } from './store/store.ts';
import { createCluster } from './cluster/factory.ts';
import { createSecretsPort } from './secrets/grpc-secrets.ts';
import type { ComputeContext } from './domain/context.ts';
import { Reconciler } from './domain/reconciler.ts';
import { computeRoutes } from './app.ts';

export interface StartOptions {
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
}

/** Starts compute: its schema, its cluster, its routes, and the reconciler in the background. */
export function start(config: ComputeConfig, options: StartOptions = {}): Promise<RunningService> {
  return startService({
    name: 'compute',
    config,
    httpPort: config.PIER_COMPUTE_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: options.logDestination,
    async wire({ db, logger, relay, onStop }) {
      const secrets = createSecretsPort(config);
      onStop('secrets client', () => secrets.close());
      const cluster = createCluster(config, secrets.port, logger);
      const ctx: ComputeContext = {
        store: new KnexComputeStore(db),
        cluster,
        secrets: secrets.port,
        log: logger,
        locks: new KeyedMutex(),
        eventsWritten: () => relay.poke(),
        now: () => new Date(),
      };
      return {
        routes: computeRoutes(ctx),
        background: [cluster, new Reconciler(ctx, logger, config.PIER_COMPUTE_RECONCILE_INTERVAL_MS)],
        describe: { cluster: cluster.kind },
      };
    },
  });
}
