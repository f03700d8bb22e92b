import { PierError, type GrpcCallObserver } from '@pier/kit';
import { SecretsClient } from '@pier/secrets';
import type { ComputeConfig } from '../config.ts';
import {
  MissingSecretError,
  referenceKey,
  type SecretReference,
  type SecretScope,
  type SecretsPort,
  type ReferenceProblem,
} from '../domain/env/secrets-port.ts';
import { UnconfiguredSecrets } from './unconfigured.ts';

/** The secrets service's gRPC (CheckReferences / ResolveReferences) as compute's SecretsPort. */
export class GrpcSecrets implements SecretsPort {
  constructor(private readonly client: SecretsClient) {}

  async check(scope: SecretScope, refs: SecretReference[]): Promise<ReferenceProblem[]> {
    return this.client.checkReferences(scope.workspaceId, scope.vpcId, refs);
  }

  async resolve(scope: SecretScope, refs: SecretReference[]): Promise<Map<string, string>> {
    try {
      const values = await this.client.resolveReferences(scope.workspaceId, scope.vpcId, refs);
      return new Map(values.map((v) => [referenceKey(v), v.value]));
    } catch (err) {
      // Gone between the check and the container start: the rollout fails on it, by name.
      if (err instanceof PierError && err.code === 'missing_secret') throw new MissingSecretError([], err.message);
      throw err;
    }
  }
}

/** The secrets service as compute's SecretsPort, per configuration. */
export function createSecretsPort(config: ComputeConfig, observe?: GrpcCallObserver): { port: SecretsPort; close(): void } {
  if (!config.PIER_SECRETS_GRPC_URL || !config.PIER_COMPUTE_SERVICE_PRIVATE_KEY) return { port: new UnconfiguredSecrets(), close: () => undefined };
  const client = new SecretsClient({ address: config.PIER_SECRETS_GRPC_URL, privateKeyJwk: config.PIER_COMPUTE_SERVICE_PRIVATE_KEY, observe });
  return { port: new GrpcSecrets(client), close: () => client.close() };
}
