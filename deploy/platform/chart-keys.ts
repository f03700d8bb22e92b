/**
 * Prints the `keys:` values deploy/helm/pier needs and a template cannot make (Ed25519
 * JWKs), with fresh database and NATS passwords:
 *   node --import tsx deploy/platform/chart-keys.ts > pier-keys.yaml
 *   helm install pier deploy/helm/pier -f pier-keys.yaml
 * Keep the file: an upgrade with other keys invalidates every token and signature.
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { generateIdentityKeys, SERVICE_SCHEMAS } from '@pier/kit';
import { NATS_USERS } from './nats-config.ts';

export interface ChartKeys {
  identityPrivateKey: string;
  identityPublicKey: string;
  computePrivateKey: string;
  computePublicKey: string;
  gatewayPrivateKey: string;
  gatewayPublicKey: string;
  databasePasswords: Record<string, string>;
  postgresPassword: string;
  /** Each service's password on the chart's NATS. */
  natsPasswords: Record<string, string>;
}

export async function chartKeys(): Promise<ChartKeys> {
  const identity = await generateIdentityKeys();
  const compute = await generateIdentityKeys();
  const gateway = await generateIdentityKeys();
  const password = () => randomBytes(24).toString('hex');
  return {
    identityPrivateKey: identity.privateJwk,
    identityPublicKey: identity.publicJwk,
    computePrivateKey: compute.privateJwk,
    computePublicKey: compute.publicJwk,
    gatewayPrivateKey: gateway.privateJwk,
    gatewayPublicKey: gateway.publicJwk,
    databasePasswords: Object.fromEntries(SERVICE_SCHEMAS.map((s) => [s, password()])),
    postgresPassword: password(),
    natsPasswords: Object.fromEntries(NATS_USERS.map((u) => [u, password()])),
  };
}

/** As a values file: JSON is YAML, so no YAML writer is needed. */
export async function chartKeysValues(): Promise<string> {
  return JSON.stringify({ keys: await chartKeys() }, null, 2) + '\n';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(await chartKeysValues());
}
