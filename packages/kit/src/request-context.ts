import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import type { Credential, Identity } from './identity.ts';

// Who is making the change a request makes, and from where: set by the service's request
// handling (route-handler.ts, upgrade.ts) from the verified identity token and the
// address the gateway forwards, and read by writeEvent, so every event written while the
// request runs names its actor and source address without any call site passing them.
// Background work (reconcilers, schedulers) runs outside any request: its events have a
// null actor, the platform's own changes.

/** The actor of an event: the user and the credential they used. */
export interface EventActor {
  user_id: string;
  email: string | null;
  credential: Credential | null;
}

export interface RequestContext {
  actor: EventActor | null;
  /** The client's address as the gateway saw it; null when not forwarded by a gateway. */
  sourceIp: string | null;
}

/** Set by the gateway on every request it forwards (and dropped from what a client sends). */
export const CLIENT_ADDRESS_HEADER = 'x-pier-client-address';

const storage = new AsyncLocalStorage<RequestContext>();

/** The context of the request running now, or undefined in background work. */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Runs `fn` with `ctx` as the request context of everything it does, awaited or scheduled. */
export function runWithRequestContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/**
 * Runs `fn` outside any request context: background loops whose timers were first set while
 * a request ran (a poke) must not write their events in that request's name.
 */
export function runAsPlatform<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** The actor an identity stands for: a user's, or null for a Pier service calling another. */
export function actorOf(identity: Identity): EventActor | null {
  if (identity.kind !== 'user') return null;
  return { user_id: identity.subject, email: identity.email ?? null, credential: identity.credential ?? null };
}

/** The client address the gateway forwarded, when it is an IP address. */
export function forwardedClientAddress(headers: IncomingHttpHeaders): string | null {
  const raw = headers[CLIENT_ADDRESS_HEADER];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) return null;
  const bare = value.startsWith('::ffff:') && isIP(value.slice(7)) === 4 ? value.slice(7) : value;
  return isIP(bare) ? bare : null;
}

/** The request context of a request carrying `identity`. */
export function requestContextOf(identity: Identity, headers: IncomingHttpHeaders): RequestContext {
  return { actor: actorOf(identity), sourceIp: forwardedClientAddress(headers) };
}
