import type { Request, Response, NextFunction } from 'express';
import { UNMATCHED_ROUTE, type ServiceMetrics } from './metrics.ts';

/** Names the route a request matched (its template), for the request metrics. */
export function routeName(template: string) {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.locals.route = template;
    next();
  };
}

/** Observes each answered request in the histogram, labelled with its route template. */
export function requestMetrics(metrics: ServiceMetrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const start = performance.now();
    res.once('finish', () => {
      metrics.observeRequest(req.method, (res.locals.route as string | undefined) ?? UNMATCHED_ROUTE, res.statusCode, (performance.now() - start) / 1000);
    });
    next();
  };
}
