/**
 * Prints the `keys:` values deploy/helm/pier needs and a template cannot make (Ed25519
 * JWKs), with fresh database passwords:
 *   node --import tsx deploy/platform/chart-keys.ts > pier-keys.yaml
 *   helm install pier deploy/helm/pier -f pier-keys.yaml
 * Keep the file: an upgrade with other keys invalidates every token and signature.
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { generateIdentityKeys, SERVICE_SCHEMAS } from '@pier/kit';

export interface ChartKeys {
  identityPrivateKey: string;
  identityPublicKey: string;
  computePrivateKey: string;
  computePublicKey: string;
  databasePasswords: Record<string, string>;
  postgresPassword: string;
}

export async function chartKeys(): Promise<ChartKeys> {
  const identity = await generateIdentityKeys();
  const compute = await generateIdentityKeys();
  const password = () => randomBytes(24).toString('hex');
  return {
    identityPrivateKey: identity.privateJwk,
    identityPublicKey: identity.publicJwk,
    computePrivateKey: compute.privateJwk,
    computePublicKey: compute.publicJwk,
    databasePasswords: Object.fromEntries(SERVICE_SCHEMAS.map((s) => [s, password()])),
    postgresPassword: password(),
  };
}

/** As a values file: JSON is YAML, so no YAML writer is needed. */
export async function chartKeysValues(): Promise<string> {
  return JSON.stringify({ keys: await chartKeys() }, null, 2) + '\n';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(await chartKeysValues());
}
