import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generateIdentityKeys, SERVICE_SCHEMAS, type ServiceSchema } from '@pier/kit';
import { NATS_USERS, type NatsUser } from '../platform/nats-config.ts';

/**
 * What the launcher generates once and must find again on the next start: the identity
 * key pair (every identity token and every service trusts it), the service roles'
 * passwords, the embedded PostgreSQL's superuser password, the gateway's and compute's own
 * keys and each service's NATS password. It holds secrets, so the
 * file is the owner's alone (0600), like the CLI's credentials.
 */
export interface LocalState {
  identity: { privateJwk: string; publicJwk: string };
  servicePasswords: Record<ServiceSchema, string>;
  postgresPassword: string;
  /** AES-256-GCM key of the secrets service's local (docker) store, base64. */
  secretsStoreKey: string;
  /** Compute's own Ed25519 key pair: it signs its calls to secrets with it. */
  computeKeys: { privateJwk: string; publicJwk: string };
  /** The gateway's own Ed25519 key pair: it signs its calls to auth's gRPC with it. */
  gatewayKeys: { privateJwk: string; publicJwk: string };
  /** Each service's NATS password (its user is its name): the launcher's nats-server admits no one else. */
  natsPasswords: Record<NatsUser, string>;
}

const secret = () => randomBytes(24).toString('hex');

export async function loadState(home: string): Promise<{ state: LocalState; file: string; created: boolean }> {
  const file = path.join(home, 'state.json');
  // Traversable (the embedded PostgreSQL runs as another user when we are root); what is
  // secret in it is protected by its own mode.
  await mkdir(home, { recursive: true, mode: 0o755 });
  let found: Partial<LocalState> = {};
  try {
    found = JSON.parse(await readFile(file, 'utf8')) as Partial<LocalState>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  // Fill in only what is missing, so an older state file keeps its keys and passwords.
  const state: LocalState = {
    identity: found.identity ?? (await generateIdentityKeys()),
    // Per entry: a state file from before a service existed (events) gets that one's password.
    servicePasswords: Object.fromEntries(SERVICE_SCHEMAS.map((s) => [s, found.servicePasswords?.[s] ?? secret()])) as Record<ServiceSchema, string>,
    postgresPassword: found.postgresPassword ?? secret(),
    secretsStoreKey: found.secretsStoreKey ?? randomBytes(32).toString('base64'),
    computeKeys: found.computeKeys ?? (await generateIdentityKeys()),
    gatewayKeys: found.gatewayKeys ?? (await generateIdentityKeys()),
    natsPasswords: Object.fromEntries(NATS_USERS.map((u) => [u, found.natsPasswords?.[u] ?? secret()])) as Record<NatsUser, string>,
  };
  const created = Object.keys(found).length === 0;
  if (JSON.stringify(found) !== JSON.stringify(state)) {
    await writeFile(file, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
  }
  await chmod(file, 0o600);
  return { state, file, created };
}
