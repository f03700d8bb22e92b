import type { z } from 'zod';
import type { Logger } from './logger.ts';
import type { Readable } from 'node:stream';
import { ForbiddenError } from './errors.ts';
import type { Identity } from './identity.ts';
import { requireRole, type Requirement } from './roles.ts';

// A JSON route's contract: what it takes, who may call it, what it answers. The app
// (service-app.ts) checks requests against it and the OpenAPI document (openapi.ts) is
// written from it, so the two cannot drift.

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
  /** The `Last-Event-ID` header: where a reconnecting server-sent event client left off. */
  lastEventId?: string;
  /**
   * The request body as it arrives, for a route with `rawBody`: reading past the route's
   * limit fails the stream with a PayloadTooLargeError (a 413).
   */
  stream?: Readable;
}

/** One server-sent event: `data` is sent as JSON; `id`, when set, is what a reconnecting client sends back as `Last-Event-ID`. */
export interface ServerSentEvent {
  id?: string;
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
