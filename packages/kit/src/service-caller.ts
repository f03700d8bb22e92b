import { AuthenticationError, ForbiddenError } from './errors.ts';
import { grpc } from './grpc.ts';
import { IDENTITY_HEADER, IdentityVerifier, importIdentityKey, SERVICE_ISSUER, signIdentity } from './identity.ts';

/**
 * How one Pier service proves to another's gRPC server who is calling: the caller holds its
 * own Ed25519 key pair and sends a short-lived token of kind `service`, signed with it and
 * issued by `pier-service`, in the identity header; the server holds only the caller's
 * public key. Neither a user's identity token (auth's key) nor another service's token
 * passes, and a process that merely reaches the port has nothing to send.
 */
export class ServiceCallerCheck {
  private constructor(
    private readonly verifier: IdentityVerifier | undefined,
    private readonly caller: string,
    private readonly server: string,
    private readonly keyVariable: string,
  ) {}

  /** `callerPublicJwk` unset: every call is refused (there is nobody it could verify). */
  static async create(callerPublicJwk: string | undefined, caller: string, server: string, keyVariable: string): Promise<ServiceCallerCheck> {
    if (!callerPublicJwk) return new ServiceCallerCheck(undefined, caller, server, keyVariable);
    try {
      return new ServiceCallerCheck(await IdentityVerifier.fromJwk(callerPublicJwk, SERVICE_ISSUER), caller, server, keyVariable);
    } catch (err) {
      throw new Error(`${keyVariable} must be ${caller}'s Ed25519 public JWK (JSON): ${(err as Error).message}`, { cause: err });
    }
  }

  get configured(): boolean {
    return this.verifier !== undefined;
  }

  /** Resolves for the caller's token; UNAUTHENTICATED without a valid one, PERMISSION_DENIED for another service's. */
  async admit(metadata: grpc.Metadata): Promise<void> {
    if (!this.verifier) throw new AuthenticationError(`no caller can be verified: ${this.keyVariable} is not configured`, 'unauthenticated');
    const token = metadata.get(IDENTITY_HEADER)[0];
    const identity = await this.verifier.verify(typeof token === 'string' ? token : undefined);
    if (identity.kind !== 'service' || identity.subject !== this.caller) {
      throw new ForbiddenError(`only ${this.caller} may call the ${this.server} service`, 'caller_not_allowed');
    }
  }
}

const TOKEN_TTL_S = 60;

/** The caller's side: gRPC metadata carrying its service token, renewed well before it expires. */
export class ServiceTokenSigner {
  private current?: { metadata: grpc.Metadata; renewAt: number };
  private key?: ReturnType<typeof importIdentityKey>;

  constructor(
    private readonly privateKeyJwk: string,
    private readonly subject: string,
  ) {}

  /**
   * The same Metadata instance until renewal: grpc-js copies a call's metadata when the call
   * starts, so one instance may serve every call, and no call signs anything.
   */
  async metadata(): Promise<grpc.Metadata> {
    const now = Date.now();
    if (this.current && this.current.renewAt > now) return this.current.metadata;
    this.key ??= importIdentityKey(this.privateKeyJwk);
    const token = await signIdentity(await this.key, { kind: 'service', subject: this.subject }, TOKEN_TTL_S, SERVICE_ISSUER);
    const metadata = new grpc.Metadata();
    metadata.set(IDENTITY_HEADER, token);
    this.current = { metadata, renewAt: now + (TOKEN_TTL_S - 15) * 1000 };
    return metadata;
  }
}
