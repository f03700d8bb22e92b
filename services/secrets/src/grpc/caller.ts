import { AuthenticationError, ForbiddenError, IDENTITY_HEADER, IdentityVerifier, SERVICE_ISSUER, type grpc } from '@pier/kit';

/** The one service allowed to call secrets over gRPC. */
export const ALLOWED_CALLER = 'compute';

/**
 * Admits only compute: a token signed with compute's own Ed25519 key (not auth's identity
 * key, so neither a user token nor another service can pass), of kind `service` and
 * subject `compute`. Both methods require it: Check reveals which secrets exist in a VPC,
 * and Resolve hands out values.
 */
export class CallerCheck {
  private constructor(private readonly verifier: IdentityVerifier | undefined) {}

  static async create(computePublicJwk: string | undefined): Promise<CallerCheck> {
    return new CallerCheck(computePublicJwk ? await IdentityVerifier.fromJwk(computePublicJwk, SERVICE_ISSUER) : undefined);
  }

  async admit(metadata: grpc.Metadata): Promise<void> {
    if (!this.verifier) {
      throw new AuthenticationError('no caller can be verified: PIER_COMPUTE_SERVICE_PUBLIC_KEY is not configured', 'unauthenticated');
    }
    const token = metadata.get(IDENTITY_HEADER)[0];
    const identity = await this.verifier.verify(typeof token === 'string' ? token : undefined);
    if (identity.kind !== 'service' || identity.subject !== ALLOWED_CALLER) {
      throw new ForbiddenError(`only ${ALLOWED_CALLER} may call the secrets service`, 'caller_not_allowed');
    }
  }
}
