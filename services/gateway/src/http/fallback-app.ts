import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { errorHandler, loggablePath, NotFoundError, REQUEST_ID_HEADER, type Logger } from '@pier/kit';
import type { Upstream } from '../routing.ts';
import { mergedOpenApi, OPENAPI_PATH } from './openapi.ts';
import { consoleMiddleware } from './console.ts';
import type { ConsoleSignIn } from './console-sign-in.ts';

const OPENAPI_CACHE_MS = 5000;

/** Everything that is not proxied: health, the OpenAPI document, the console's files, and JSON 404s. */
export function createFallbackApp(deps: { logger: Logger; upstreams: Map<Upstream, string>; consoleDir?: string; consoleSignIn?: ConsoleSignIn }): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.locals.requestId = req.headers[REQUEST_ID_HEADER];
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: 'gateway' });
  });

  // Public on purpose: a client needs the API description before it has a token. Kept for
  // a few seconds: the document changes only when a service is redeployed, and an
  // unauthenticated endpoint must not fan out to every service on each hit.
  let openapi: { at: number; doc: Promise<Record<string, unknown>> } | undefined;
  app.get(OPENAPI_PATH, async (_req, res, next) => {
    try {
      if (!openapi || Date.now() - openapi.at > OPENAPI_CACHE_MS) {
        const doc = mergedOpenApi(deps.upstreams);
        openapi = { at: Date.now(), doc };
        doc.catch(() => (openapi = undefined));
      }
      res.json(await openapi.doc);
    } catch (err) {
      next(err);
    }
  });

  if (deps.consoleDir) app.use(consoleMiddleware(deps.consoleDir, deps.logger, deps.consoleSignIn));

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(new NotFoundError(`no route for ${req.method} ${loggablePath(req.originalUrl)}`, 'route_not_found'));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
