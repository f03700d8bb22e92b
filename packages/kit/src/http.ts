import express, { type Express, type Request, type Response, type NextFunction } from 'express';
import { randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { z } from 'zod';
import type { Logger } from './logger.ts';
import { PierError, InputError, NotFoundError, ForbiddenError, PayloadTooLargeError, errorBody, httpStatusOf } from './errors.ts';
import { IDENTITY_HEADER, type Identity, type IdentityVerifier } from './identity.ts';
import { requireRole, type Requirement } from './roles.ts';
import { pgErrorOf } from './pg-errors.ts';
import type { UpgradeRoute } from './upgrade.ts';
import { UNMATCHED_ROUTE, type ServiceMetrics } from './metrics.ts';
import type { Readiness } from './readiness.ts';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyOf, requestFingerprint, type IdempotencyKeys } from './idempotency.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  identity: Identity;
  /**
   * The identity token exactly as received, for a call to another Pier service made on the
   * caller's behalf (it proves who asks and for which workspace). Never logged.
   */
  identityToken: string;
  requestId: string;
  log: Logger;
  /** Aborted when the client goes away: a streamed answer (`events`) stops then. */
  signal: AbortSignal;
  /**
   * The request body as it arrives, for a route with `rawBody`: reading past the route's
   * limit fails the stream with a PayloadTooLargeError (a 413).
   */
  stream?: Readable;
}

/** One server-sent event: `data` is sent as JSON. */
export interface ServerSentEvent {
  event?: string;
  data: unknown;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  /** Extra response headers (for example a count a benchmark reads). */
  headers?: Record<string, string>;
  /**
   * Instead of a body, a server-sent event stream (`text/event-stream`): each event is
   * written as it comes, with a keep-alive comment between them, until the iterable ends
   * or the client goes away.
   */
  events?: AsyncIterable<ServerSentEvent>;
}

/**
 * One route: its contract (used both to validate requests and to write the OpenAPI
 * document, so the two cannot drift) and the handler that calls the domain.
 *
 * `access`: `Member`/`Admin` as the spec's tables say, checked against the caller's role in
 * the path's workspace; `User` for routes of the caller's own (no workspace in the path);
 * `Service` for internal routes only another Pier service may call.
 */
// `any` defaults: a list of routes holds routes of every shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface Route<P = any, Q = any, B = any> {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  access: Requirement | 'User' | 'Service';
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /**
   * A body that is not JSON (an uploaded archive): of one of `contentTypes`, at most
   * `limitBytes` (more is a 413), handed to the handler as `stream`.
   */
  rawBody?: { contentTypes: string[]; limitBytes: number; description: string };
  /** `contentType`: what the answer is when not JSON (`text/event-stream` for `events`). */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  handler: (input: RouteInput<P, Q, B>) => Promise<RouteResult>;
  /**
   * For a create sent with an `Idempotency-Key` whose first attempt died after making its
   * resource's row (insertForKey): the answer the first attempt would have given, if the
   * resource is there; undefined when it is gone or was never finished (then undone here,
   * if the reconcilers have not yet), and the request runs again.
   */
  replay?: (input: RouteInput<P, Q, B>, resourceId: string) => Promise<RouteResult | undefined>;
  /**
   * Fields of the answer's body shown once (a new API key): never stored with the answer
   * kept for an `Idempotency-Key`, so a replay carries them as null.
   */
  shownOnce?: string[];
}

export function defineRoute<P, Q, B>(route: Route<P, Q, B>): Route<P, Q, B> {
  return route;
}

/** Turns the first problems zod found into one message that names the field. */
export function describeZodError(error: z.ZodError, where: string): InputError {
  const issues = error.issues.slice(0, 5);
  const parts = issues.map((i) => {
    const field = i.path.length ? i.path.join('.') : where;
    return `${field}: ${i.message}`;
  });
  const first = issues[0];
  const field = first && first.path.length ? first.path.join('.') : undefined;
  return new InputError(parts.join('; '), 'invalid_request', field ? { field } : undefined);
}

export function parseWith<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw describeZodError(parsed.error, where);
  return parsed.data;
}

/**
 * Refuses U+0000 anywhere in validated input (strings and object keys, at any depth).
 * PostgreSQL text and jsonb cannot store it, so without this check such a value reaches
 * the INSERT and fails there as a 500; it runs after the route's own schema, so a field
 * with its own rule for NUL keeps its message.
 */
export function refuseNul(value: unknown, where: string): void {
  const path = nulPath(value, []);
  if (!path) return;
  const field = path.length ? path.join('.') : undefined;
  throw new InputError(`${field ?? where}: must not contain NUL characters (U+0000)`, 'invalid_request', field ? { field } : undefined);
}

function nulPath(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key.includes('\0')) return [...path, key];
      const found = nulPath(v, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** Checks that the identity was issued for the workspace and VPC this path names. */
export function checkScope(identity: Identity, params: Record<string, string>, access: Route['access']): void {
  if (access === 'Service') {
    if (identity.kind !== 'service') throw new ForbiddenError('this route is for Pier services only');
    return;
  }
  if (identity.kind !== 'user') throw new ForbiddenError('a user identity is required');
  if (access === 'User') return;
  const ws = params.workspaceID;
  if (ws && identity.workspaceId !== ws) throw new ForbiddenError('identity was not issued for this workspace');
  const vpc = params.vpcID;
  if (vpc && identity.vpcId !== vpc) throw new ForbiddenError('identity was not issued for this VPC');
  requireRole(identity.role, access);
}

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
}

export function createServiceApp(opts: ServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestIds());
  app.use(accessLog(opts.logger));
  if (opts.metrics) app.use(requestMetrics(opts.metrics));
  app.use(express.json({ limit: opts.bodyLimit ?? '256kb', strict: false }));

  app.get('/healthz', routeName('/healthz'), async (_req, res, next) => {
    try {
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
  for (const u of opts.upgrades ?? []) {
    app.get(expressPath(u.path), routeName(u.path), async (req, res, next) => {
      try {
        // The caller is checked first, as on the handshake: a Viewer learns 403, not how to upgrade.
        checkScope(await opts.verifier.verify(req.header(IDENTITY_HEADER) ?? ''), req.params as Record<string, string>, u.access);
        res
          .status(426)
          .set('upgrade', 'websocket')
          .json({ error: 'this endpoint upgrades to a WebSocket (Connection: Upgrade, Upgrade: websocket)', code: 'upgrade_required' });
      } catch (err) {
        next(err);
      }
    });
  }

  for (const route of opts.routes) {
    app[route.method](expressPath(route.path), routeName(route.path), async (req: Request, res: Response, next: NextFunction) => {
      try {
        const identityToken = req.header(IDENTITY_HEADER) ?? '';
        const identity = await opts.verifier.verify(identityToken);
        const rawParams = req.params as Record<string, string>;
        checkScope(identity, rawParams, route.access);
        const params = route.params ? parseWith(route.params, rawParams, 'path') : rawParams;
        const query = route.query ? parseWith(route.query, req.query, 'query') : {};
        refuseNul(query, 'query');
        let body: unknown = undefined;
        let stream: Readable | undefined;
        if (route.rawBody) stream = rawBodyOf(req, route.rawBody);
        else if (route.body) {
          // No body at all reads as `{}`, so routes whose fields all have defaults can be
          // called bare; a body that is there but not JSON is refused.
          const sent = req.body ?? (hasNoBody(req) ? {} : undefined);
          if (sent === undefined) throw new InputError('request body must be JSON (Content-Type: application/json)', 'invalid_request');
          body = parseWith(route.body, sent, 'body');
          refuseNul(body, 'body');
        }
        const log = res.locals.log as Logger;
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        const input = { params, query, body, identity, identityToken, requestId: res.locals.requestId, log, signal: gone.signal, stream };
        const key = route.method !== 'get' && route.access !== 'Service' ? idempotencyKeyOf(req.header(IDEMPOTENCY_KEY_HEADER)) : undefined;
        if (key !== undefined && opts.idempotency) {
          const scope = rawParams.workspaceID ? `workspace:${rawParams.workspaceID}` : `user:${identity.subject}`;
          const fingerprint = requestFingerprint(req.method, req.originalUrl, route.rawBody ? rawBodyFingerprint(req) : req.body);
          const { answer, replayed } = await opts.idempotency.run(scope, key, fingerprint, async (made) => {
            try {
              const replay = made !== undefined && route.replay ? await route.replay(input, made) : undefined;
              const result = replay ?? (await route.handler(input));
              // A stream is not kept: it is sent as it comes and never replayed.
              if (result.events) return { ...result, keep: false };
              return {
                status: result.status,
                body: result.body,
                headers: result.headers,
                keep: true,
                replayBody: withoutShownOnce(result.body, route.shownOnce),
              };
            } catch (err) {
              return { ...errorAnswer(err, opts.logger, res.locals.requestId as string), keep: true };
            }
          });
          if (replayed) res.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
          await send(res, answer as RouteResult, gone.signal, opts.keepAliveMs);
          return;
        }
        await send(res, await route.handler(input), gone.signal, opts.keepAliveMs);
      } catch (err) {
        // The first attempt is still running: a client that retries learns when to try again.
        if (err instanceof PierError && err.code === 'idempotency_key_in_use') res.set('retry-after', '1');
        next(err);
      }
    });
  }

  app.use(notFound());
  app.use(errorHandler(opts.logger));
  return app;
}

async function send(res: Response, result: RouteResult, gone: AbortSignal, keepAliveMs = 15_000): Promise<void> {
  if (result.headers) res.set(result.headers);
  if (result.events) await writeEvents(res, result.status, result.events, gone, keepAliveMs);
  else if (result.body === undefined) res.status(result.status).end();
  else res.status(result.status).json(result.body);
}

function withoutShownOnce(body: unknown, fields: string[] | undefined): unknown {
  if (!fields || !body || typeof body !== 'object') return undefined;
  return { ...body, ...Object.fromEntries(fields.map((f) => [f, null])) };
}

/** An uploaded body is not read twice: a retry is the same upload when its type and length are. */
function rawBodyFingerprint(req: Request): unknown {
  return { contentType: req.header('content-type') ?? null, contentLength: req.header('content-length') ?? null };
}

/**
 * A raw body as a stream that fails once it passes `limitBytes`; a declared length over
 * it is refused before anything is read, a content type not listed too.
 */
function rawBodyOf(req: Request, spec: NonNullable<Route['rawBody']>): Readable {
  const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!spec.contentTypes.includes(type)) {
    throw new InputError(`request body: Content-Type must be ${spec.contentTypes.join(' or ')}, not ${type || 'missing'}`, 'invalid_content_type');
  }
  const tooLarge = () => new PayloadTooLargeError(`request body over the limit of ${spec.limitBytes} bytes`);
  if (Number(req.header('content-length') ?? 0) > spec.limitBytes) throw tooLarge();
  let seen = 0;
  return req.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        done(seen > spec.limitBytes ? tooLarge() : null, chunk);
      },
    }),
  );
}

/** Writes server-sent events until they end or the client goes; a comment when quiet for `keepAliveMs`. */
async function writeEvents(res: Response, status: number, events: AsyncIterable<ServerSentEvent>, gone: AbortSignal, keepAliveMs: number): Promise<void> {
  res.writeHead(status, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  // Proxies and clients that close idle connections see a comment line at least this often.
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
  try {
    for await (const e of events) {
      if (gone.aborted) break;
      res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
    }
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}

function hasNoBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined;
}

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

/** Names the route a request matched (its template), for the request metrics. */
function routeName(template: string) {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.locals.route = template;
    next();
  };
}

/** Observes each answered request in the histogram, labelled with its route template. */
function requestMetrics(metrics: ServiceMetrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const start = performance.now();
    res.once('finish', () => {
      metrics.observeRequest(req.method, (res.locals.route as string | undefined) ?? UNMATCHED_ROUTE, res.statusCode, (performance.now() - start) / 1000);
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

/** The status and JSON body an error is answered with; an unexpected one is logged. */
function errorAnswer(err: unknown, logger: Logger, requestId: string | undefined): { status: number; body: Record<string, unknown> } {
  const known = toPierError(err);
  const status = httpStatusOf[known.kind];
  if (status >= 500 && known.kind !== 'unavailable') logger.error({ err, requestId }, 'unhandled error');
  return { status, body: errorBody(known) };
}

function toPierError(err: unknown): PierError {
  if (err instanceof PierError) return err;
  const fromPg = pgErrorOf(err);
  if (fromPg) return fromPg;
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.parse.failed') return new InputError('malformed JSON body', 'malformed_json');
  if (e?.type === 'entity.too.large') return new PayloadTooLargeError('request body too large');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new InputError('unsupported request encoding', 'invalid_request');
  }
  return new PierError('internal', 'internal error', 'internal');
}

// ---------- OpenAPI ----------

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, location: 'path' | 'query', path: string) {
  const names = location === 'path' ? [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!) : [];
  const js = schema ? (jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] }) : {};
  const props = js.properties ?? {};
  const all = new Set([...names, ...Object.keys(props)]);
  return [...all].map((name) => ({
    name,
    in: location,
    required: location === 'path' ? true : (js.required ?? []).includes(name),
    schema: props[name] ?? { type: 'string' },
  }));
}

/** The `paths` object of an OpenAPI 3.1 document for these routes. */
const ERROR_BODY_SCHEMA = {
  type: 'object',
  properties: { error: { type: 'string' }, code: { type: 'string' } },
  required: ['error', 'code'],
};

/** Every write takes an `Idempotency-Key` (idempotency.ts); its own answers are documented with it. */
function documentIdempotency(op: Record<string, unknown>, r: Route): void {
  (op.parameters as unknown[]).push({
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the request safe to retry: sent again with the same key, method, path and body within 24 hours, it is not run again and gets ' +
      'the first answer (with `Idempotent-Replayed: true`). 1 to 255 printable ASCII characters; a new UUID per request is a good choice.' +
      (r.shownOnce ? ` A replay carries ${r.shownOnce.map((f) => `\`${f}\``).join(', ')} as null: it is shown once and never stored.` : ''),
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]{1,255}$' },
  });
  const responses = op.responses as Record<string, unknown>;
  for (const [status, response] of Object.entries(responses)) {
    if (!status.startsWith('2') || !r.shownOnce) continue;
    const schema = (response as { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }).content?.['application/json']?.schema;
    for (const field of r.shownOnce) {
      const property = schema?.properties?.[field];
      if (property)
        schema.properties![field] = { anyOf: [property, { type: 'null' }], description: 'Shown once; null when the answer is replayed for an Idempotency-Key' };
    }
  }
  const json = (description: string) => ({ description, content: { 'application/json': { schema: ERROR_BODY_SCHEMA } } });
  responses['400'] ??= json('Invalid request (`invalid_idempotency_key`: a malformed Idempotency-Key)');
  responses['409'] ??= json('`idempotency_key_in_use`: a request with this Idempotency-Key is still running');
  responses['422'] ??= json('`idempotency_key_reused`: this Idempotency-Key was sent with a different method, path or body');
}

export function openApiPaths(routes: Route[], upgrades: UpgradeRoute[] = []): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const u of upgrades) {
    (paths[u.path] ??= {}).get = {
      summary: u.summary,
      description: 'A WebSocket upgrade (GET with Connection: Upgrade); the token may come as the `access_token` query parameter.',
      tags: [u.tag],
      'x-pier-role': u.access,
      'x-pier-websocket': true,
      parameters: [...parameters(u.params, 'path', u.path), ...parameters(u.query, 'query', u.path)],
      responses: Object.fromEntries(
        Object.entries(u.responses).map(([status, resp]) => [
          status,
          resp.schema
            ? { description: resp.description, content: { 'application/json': { schema: jsonSchema(resp.schema, 'output') } } }
            : { description: resp.description },
        ]),
      ),
    };
  }
  for (const r of routes) {
    if (r.access === 'Service') continue;
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      'x-pier-role': r.access === 'User' ? 'any authenticated user' : r.access,
      parameters: [...parameters(r.params, 'path', r.path), ...parameters(r.query, 'query', r.path)],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, resp]) => [
          status,
          resp.schema
            ? { description: resp.description, content: { [resp.contentType ?? 'application/json']: { schema: jsonSchema(resp.schema, 'output') } } }
            : { description: resp.description },
        ]),
      ),
    };
    if (r.method !== 'get') documentIdempotency(op, r);
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    if (r.rawBody) {
      const binary = { schema: { type: 'string', format: 'binary' } };
      op.requestBody = { required: true, description: r.rawBody.description, content: Object.fromEntries(r.rawBody.contentTypes.map((t) => [t, binary])) };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return paths;
}
