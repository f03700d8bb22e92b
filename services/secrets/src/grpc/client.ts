import {
  call,
  clientConstructor,
  grpc,
  IDENTITY_HEADER,
  importIdentityKey,
  observingClient,
  SERVICE_ISSUER,
  signIdentity,
  type GrpcCallObserver,
} from '@pier/kit';
import type { CheckReferencesRequest } from '@pier/kit/proto/secrets/v1/CheckReferencesRequest.ts';
import type { CheckReferencesResponse__Output } from '@pier/kit/proto/secrets/v1/CheckReferencesResponse.ts';
import type { ResolveReferencesRequest } from '@pier/kit/proto/secrets/v1/ResolveReferencesRequest.ts';
import type { ResolveReferencesResponse__Output } from '@pier/kit/proto/secrets/v1/ResolveReferencesResponse.ts';
import { PROTO_FILE, PROTO_PACKAGE, SERVICE_NAME } from './secrets-grpc.ts';

export interface SecretRef {
  secretId: string;
  key: string;
}

export interface MissingSecretRef extends SecretRef {
  reason: 'secret_not_found' | 'key_not_found';
}

export interface ResolvedSecretRef extends SecretRef {
  value: string;
}

export interface SecretsClientOptions {
  /** host:port of the secrets gRPC server (PIER_SECRETS_GRPC_PORT, 7114 by default). */
  address: string;
  /** The caller's own Ed25519 private JWK (JSON); secrets holds the matching public key. */
  privateKeyJwk: string;
  /** Identity the token names; secrets admits only `compute`. */
  subject?: string;
  timeoutMs?: number;
  /** Told of each call (the caller's pier_grpc_client_duration_seconds). */
  observe?: GrpcCallObserver;
}

const TOKEN_TTL_S = 60;

/**
 * Compute's client of the secrets service. Failures come back as Pier domain errors:
 * `missing_secret` (not found) when a reference does not resolve, `cluster_unavailable`
 * when the store cannot be reached, `caller_not_allowed` for any identity but compute's.
 */
export class SecretsClient {
  private readonly client: grpc.Client;
  private token?: { value: string; renewAt: number };
  private key?: Promise<Awaited<ReturnType<typeof importIdentityKey>>>;

  constructor(private readonly opts: SecretsClientOptions) {
    const Ctor = clientConstructor(PROTO_FILE, PROTO_PACKAGE, SERVICE_NAME);
    this.client = new Ctor(opts.address, grpc.credentials.createInsecure(), { interceptors: opts.observe ? [observingClient(opts.observe)] : [] });
  }

  async checkReferences(workspaceId: string, vpcId: string, refs: SecretRef[]): Promise<MissingSecretRef[]> {
    const res = await call<CheckReferencesRequest, CheckReferencesResponse__Output>(
      this.client,
      'CheckReferences',
      request(workspaceId, vpcId, refs),
      await this.metadata(),
      this.opts.timeoutMs,
    );
    return res.missing.map((m) => ({ secretId: m.secret_id, key: m.key, reason: m.reason as MissingSecretRef['reason'] }));
  }

  async resolveReferences(workspaceId: string, vpcId: string, refs: SecretRef[]): Promise<ResolvedSecretRef[]> {
    const res = await call<ResolveReferencesRequest, ResolveReferencesResponse__Output>(
      this.client,
      'ResolveReferences',
      request(workspaceId, vpcId, refs),
      await this.metadata(),
      this.opts.timeoutMs,
    );
    return res.values.map((v) => ({ secretId: v.secret_id, key: v.key, value: v.value }));
  }

  close(): void {
    this.client.close();
  }

  private async metadata(): Promise<grpc.Metadata> {
    const now = Date.now();
    if (!this.token || this.token.renewAt <= now) {
      this.key ??= importIdentityKey(this.opts.privateKeyJwk);
      const value = await signIdentity(await this.key, { kind: 'service', subject: this.opts.subject ?? 'compute' }, TOKEN_TTL_S, SERVICE_ISSUER);
      // Renew well before expiry so a token never expires in flight.
      this.token = { value, renewAt: now + (TOKEN_TTL_S - 15) * 1000 };
    }
    const md = new grpc.Metadata();
    md.set(IDENTITY_HEADER, this.token.value);
    return md;
  }
}

function request(workspaceId: string, vpcId: string, refs: SecretRef[]): CheckReferencesRequest & ResolveReferencesRequest {
  return { workspace_id: workspaceId, vpc_id: vpcId, refs: refs.map((r) => ({ secret_id: r.secretId, key: r.key })) };
}
