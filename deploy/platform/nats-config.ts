/**
 * The NATS server configuration of an installation: one user per service, each allowed
 * only the subjects in deploy/helm/pier/files/nats-permissions.json (the chart renders the
 * same file in templates/secret.yaml). `./pier up` writes it for its nats-server; tests
 * start a real server with it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { natsInboxPrefix } from '@pier/kit';

export const NATS_USERS = ['auth', 'compute', 'databases', 'secrets', 'gateway', 'events'] as const;
export type NatsUser = (typeof NATS_USERS)[number];

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

const PERMISSIONS_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helm/pier/files/nats-permissions.json');

/** Each service's permissions, its own reply inbox included. */
export function natsPermissions(): Record<NatsUser, NatsPermissions> {
  const { users } = JSON.parse(readFileSync(PERMISSIONS_FILE, 'utf8')) as { users: Record<NatsUser, NatsPermissions> };
  return Object.fromEntries(NATS_USERS.map((u) => [u, { publish: users[u].publish, subscribe: [...users[u].subscribe, `${natsInboxPrefix(u)}.>`] }])) as Record<
    NatsUser,
    NatsPermissions
  >;
}

export interface NatsServerOptions {
  /** host:port the server listens on. */
  listen: string;
  /** JetStream's store. */
  storeDir: string;
  /** Each service's password. */
  passwords: Record<NatsUser, string>;
  /** HTTP monitoring port (/healthz), none when absent. */
  httpPort?: number;
  /** Users beyond the services' own (tests add an observer). */
  extraUsers?: { user: string; password: string; permissions?: NatsPermissions }[];
}

/** A quoted string of NATS's configuration format (JSON's escaping is a subset it reads). */
const q = (s: string) => JSON.stringify(s);

function userEntry(user: string, password: string, permissions?: NatsPermissions): string {
  if (!permissions) return `    { user: ${q(user)}, password: ${q(password)} }`;
  const list = (subjects: string[]) => `[${subjects.map(q).join(', ')}]`;
  // An empty allow list would mean "no restriction": deny everything instead.
  const side = (subjects: string[]) => (subjects.length ? `{ allow: ${list(subjects)} }` : `{ deny: [">"] }`);
  return `    { user: ${q(user)}, password: ${q(password)}, permissions: { publish: ${side(permissions.publish)}, subscribe: ${side(permissions.subscribe)} } }`;
}

/** The server's configuration file; it holds passwords, so whoever writes it keeps it 0600. */
export function natsServerConfig(o: NatsServerOptions): string {
  const permissions = natsPermissions();
  const users = [
    ...NATS_USERS.map((u) => userEntry(u, o.passwords[u], permissions[u])),
    ...(o.extraUsers ?? []).map((e) => userEntry(e.user, e.password, e.permissions)),
  ];
  return [
    '# Written by Pier (deploy/platform/nats-config.ts): one user per service, each allowed only its own subjects.',
    `listen: ${q(o.listen)}`,
    ...(o.httpPort !== undefined ? [`http_port: ${o.httpPort}`] : []),
    `jetstream { store_dir: ${q(o.storeDir)} }`,
    'authorization {',
    '  users = [',
    users.join(',\n'),
    '  ]',
    '}',
    '',
  ].join('\n');
}
