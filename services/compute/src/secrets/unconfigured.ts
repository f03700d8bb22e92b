import { UnavailableError } from '@pier/kit';
import type { SecretsPort } from '../domain/env/secrets-port.ts';

/**
 * Used when PIER_SECRETS_GRPC_URL is not set: literal variables work, and anything that
 * needs a secret reference is refused with 503 rather than run without the variable.
 */
export class UnconfiguredSecrets implements SecretsPort {
  private fail(): never {
    throw new UnavailableError('secret references need the secrets service, and PIER_SECRETS_GRPC_URL is not set', 'secrets_unavailable');
  }
  async check(): Promise<never> {
    this.fail();
  }
  async resolve(): Promise<never> {
    this.fail();
  }
}
