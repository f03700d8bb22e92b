import express, { type Express } from 'express';
import type { Logger } from './logger.ts';
import type { IdentityVerifier } from './identity.ts';
import type { ServiceMetrics } from './metrics.ts';
import type { Readiness } from './readiness.ts';
import type { IdempotencyKeys } from './idempotency.ts';
import type { Route } from './route.ts';
import type { UpgradeRoute } from './upgrade.ts';
import { expressPath } from './request-parsing.ts';
import { accessLog, errorHandler, notFound, requestIds } from './middleware.ts';
import { requestMetrics, routeName } from './request-metrics.ts';
import { routeHandler, upgradeRequiredHandler } from './route-handler.ts';
import { openApiPaths } from './openapi.ts';
import { closeWhileDraining, type Drain } from './drain.ts';

export interface ServiceAppOptions {
  service: string;
  logger: Logger;
  verifier: IdentityVerifier;
  routes: Route[];
  /** Keeps the answers of writes sent with an `Idempotency-Key` (idempotency.ts); without it the header is ignored. */
  idempotency?: IdempotencyKeys;
  /** WebSocket routes (upgrade.ts): in the OpenAPI document, and a 426 to a plain GET. */
  upgrades?: UpgradeRoute[];
  /** Answers `GET /healthz`; throws when a dependency is down. */
  health?: () => Promise<void>;
  /** Answers `GET /readyz`: each dependency named with its state (200 when all are up, 503 otherwise). */
  ready?: () => Promise<Readiness>;
  /** Serves `GET /metrics` from its registry and records every request in it. */
  metrics?: ServiceMetrics;
  /** Body size bound; bigger bodies get 413. */
  bodyLimit?: string;
  /** Longest silence on an event stream before a keep-alive comment (default 15 s). */
  keepAliveMs?: number;
  /** A graceful stop's state (drain.ts): readiness fails, answers close their connections, streams end. */
  drain?: Drain;
}

export function createServiceApp(opts: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const drain = opts.drain;
  if (drain) app.use(closeWhileDraining(drain));
  app.use(requestIds());
  app.use(accessLog(opts.logger));
  if (opts.metrics) app.use(requestMetrics(opts.metrics));
  app.use(express.json({ limit: opts.bodyLimit ?? '256kb', strict: false }));

  app.get('/healthz', routeName('/healthz'), async (_req, res, next) => {
    try {
      // Stopping: the chart's readiness probe (this path) takes the instance out of the endpoints.
      if (drain?.draining) {
        res.status(503).json({ status: 'draining', service: opts.service });
        return;
      }
      await opts.health?.();
      res.json({ status: 'ok', service: opts.service });
    } catch (err) {
      next(err);
    }
  });
  const ready = opts.ready;
  if (ready) {
    app.get('/readyz', routeName('/readyz'), async (_req, res, next) => {
      try {
        if (drain?.draining) {
          res.status(503).json({ status: 'draining', service: opts.service, checks: {} });
          return;
        }
        const r = await ready();
        res.status(r.status === 'ready' ? 200 : 503).json({ status: r.status, service: opts.service, checks: r.checks });
      } catch (err) {
        next(err);
      }
    });
  }
  const registry = opts.metrics?.registry;
  if (registry) {
    app.get('/metrics', routeName('/metrics'), async (_req, res, next) => {
      try {
        const text = await registry.metrics();
        res.set('content-type', registry.contentType).send(text);
      } catch (err) {
        next(err);
      }
    });
  }
  app.get('/internal/openapi', routeName('/internal/openapi'), (_req, res) => {
    res.json(openApiPaths(opts.routes, opts.upgrades));
  });
  for (const u of opts.upgrades ?? []) app.get(expressPath(u.path), routeName(u.path), upgradeRequiredHandler(u, opts.verifier));
  for (const route of opts.routes) app[route.method](expressPath(route.path), routeName(route.path), routeHandler(route, opts));

  app.use(notFound());
  app.use(errorHandler(opts.logger));
  return app;
}
