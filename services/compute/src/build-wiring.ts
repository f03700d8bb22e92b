// The build half of compute's wiring: the URL guard, the builder of the configured cluster,
// where uploads wait, the store and the limits. server.ts puts it in the context and runs the
// worker (domain/builds/build-worker.ts) in the background.
import path from 'node:path';
import { UrlGuard, type Knex, type Logger } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import type { BuildDeps } from './domain/builds/build-deps.ts';
import { createBuilder } from './cluster/factory.ts';
import { KnexBuildStore } from './store/build-store.ts';
import { FsSourceArchives } from './store/source-archives.ts';

export function createBuilds(config: ComputeConfig, db: Knex, logger: Logger): BuildDeps {
  const guard = new UrlGuard({
    allowHttp: config.PIER_BUILD_ALLOW_HTTP,
    allowedHosts: config.PIER_BUILD_ALLOWED_HOSTS,
    resolvers: config.PIER_DNS_RESOLVERS,
    field: 'repo_url',
  });
  return {
    store: new KnexBuildStore(db),
    ...createBuilder(config, guard, logger),
    sources: new FsSourceArchives(path.join(config.PIER_BUILD_WORK_DIR, 'uploads'), {
      unpackedBytes: config.PIER_BUILD_UPLOAD_LIMIT_BYTES * 5,
      entries: 100_000,
    }),
    urls: guard,
    settings: {
      concurrencyPerWorkspace: config.PIER_BUILD_CONCURRENCY,
      timeoutMs: config.PIER_BUILD_TIMEOUT_SECONDS * 1000,
      uploadLimitBytes: config.PIER_BUILD_UPLOAD_LIMIT_BYTES,
      logLimitBytes: config.PIER_BUILD_LOG_LIMIT_BYTES,
    },
    // Replaced by the worker once it exists (server.ts).
    runner: { leading: false, wake: () => undefined, cancel: async () => false },
  };
}
