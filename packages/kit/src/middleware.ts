import type { Request, Response, NextFunction } from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from './logger.ts';
import { NotFoundError } from './errors.ts';
import { errorAnswer } from './error-answer.ts';

// The express middleware every service app runs: request ids, the access log, the JSON
// 404 and the JSON error handler.

export const REQUEST_ID_HEADER = 'x-request-id';

export function requestIds() {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header(REQUEST_ID_HEADER);
    const id = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    next();
  };
}

/** The path without its query string: query parameters may carry a token (`access_token`). */
export function loggablePath(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** Probes that ask every few seconds: logged at debug, so the info log shows what people and programs did. */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The access-log level of a request to `path` (query string already removed). */
export function accessLogLevel(path: string): 'info' | 'debug' {
  return PROBE_PATHS.has(path) ? 'debug' : 'info';
}

export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const start = process.hrtime.bigint();
    const log = logger.child({ requestId: res.locals.requestId });
    res.locals.log = log;
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      const path = loggablePath(req.originalUrl);
      log[accessLogLevel(path)]({ method: req.method, path, status: res.statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
    });
    next();
  };
}

export function notFound() {
  return (req: Request, _res: Response, next: NextFunction) => {
    next(new NotFoundError(`no route for ${req.method} ${loggablePath(req.originalUrl)}`, 'route_not_found'));
  };
}

export function errorHandler(logger: Logger) {
  // express recognises error handlers by their four parameters.
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const { status, body } = errorAnswer(err, logger, res.locals.requestId as string | undefined);
    if (res.headersSent) return;
    res.status(status).json(body);
  };
}
