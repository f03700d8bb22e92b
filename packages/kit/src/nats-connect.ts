import type { ConnectionOptions } from 'nats';

/**
 * Where a service's NATS connection goes and as whom. Installations run NATS with one user
 * per service, each allowed only its own subjects (deploy/platform/nats-permissions.json);
 * tests and development may run it without users, and then only `url` is set.
 */
export interface NatsTarget {
  /** nats://host:port; `nats://user:password@host:port` works too. */
  url: string;
  user?: string;
  password?: string;
}

/** A URL alone (no credentials, or credentials in it), or a URL with a user. */
export type NatsServer = string | NatsTarget;

/** The NATS target of a service's environment: PIER_NATS_URL with PIER_NATS_USER / PIER_NATS_PASSWORD. */
export function natsTarget(env: { PIER_NATS_URL: string; PIER_NATS_USER?: string; PIER_NATS_PASSWORD?: string }): NatsTarget {
  return { url: env.PIER_NATS_URL, user: env.PIER_NATS_USER, password: env.PIER_NATS_PASSWORD };
}

/** Where replies to a user's requests come: the only inbox its permissions let it read. */
export const natsInboxPrefix = (user: string) => `_INBOX.${user}`;

/**
 * The nats.js options for a target. The client takes no credentials from a URL, so they are
 * moved out of it here. With a user, replies (JetStream acknowledgements, KV listings) go to
 * the user's own inbox prefix: a user may not read the shared `_INBOX.>`, where it would
 * see the replies every other client is sent.
 */
export function natsConnectOptions(server: NatsServer): ConnectionOptions {
  const target = typeof server === 'string' ? { url: server } : server;
  let url = target.url;
  let user = target.user;
  let password = target.password;
  const parsed = /^([a-z]+:\/\/)([^@/]*)@(.*)$/i.exec(url);
  if (parsed) {
    const [, scheme, userinfo, rest] = parsed;
    const colon = userinfo!.indexOf(':');
    user ??= decodeURIComponent(colon < 0 ? userinfo! : userinfo!.slice(0, colon));
    if (colon >= 0) password ??= decodeURIComponent(userinfo!.slice(colon + 1));
    url = `${scheme}${rest}`;
  }
  return user ? { servers: url, user, pass: password, inboxPrefix: natsInboxPrefix(user) } : { servers: url };
}
