// The gateway's merged OpenAPI document, built in this process from each service's route
// declarations: exactly what GET /api/v1/openapi.json answers on a running platform (a test
// compares the two), without starting one. Describing a route never calls its handler, so
// the services' dependencies are stand-ins that fail loudly if anything touches them.
import { openApiPaths, type Route, type UpgradeRoute } from '@pier/kit';
import { authRestRoutes } from '@pier/auth';
import { computeRoutes, computeUpgrades } from '@pier/compute';
import { databasesRoutes } from '@pier/databases';
import { secretsRoutes } from '@pier/secrets';
import { eventsRoutes } from '@pier/events';
import { mergeOpenApi, type Paths, type Upstream } from '@pier/gateway';

/**
 * A stand-in for any dependency: reading from it gives another stand-in (route builders
 * store and pass their dependencies around), calling it fails loudly (only handlers call,
 * and describing never runs one).
 */
const unused: never = new Proxy(function standIn() {} as object, {
  get: (_target, prop) => (prop === 'then' || typeof prop === 'symbol' ? undefined : unused),
  apply: () => {
    throw new Error('describing routes called a dependency: route builders must only close over them');
  },
  construct: () => {
    throw new Error('describing routes constructed through a dependency');
  },
}) as never;

/** What a service's /internal/openapi answers: the paths of its routes, as JSON. */
const described = (routes: Route[], upgrades: UpgradeRoute[] = []): Paths => JSON.parse(JSON.stringify(openApiPaths(routes, upgrades))) as Paths;

export function buildOpenApiDocument(): Record<string, unknown> {
  const parts: [Upstream, Paths][] = [
    ['auth', described(authRestRoutes(unused))],
    ['compute', described(computeRoutes(unused), computeUpgrades(unused, unused))],
    ['databases', described(databasesRoutes(unused))],
    ['secrets', described(secretsRoutes(unused))],
    ['events', described(eventsRoutes(unused))],
  ];
  return mergeOpenApi(parts);
}
