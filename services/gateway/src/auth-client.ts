import { clientConstructor, fromGrpcError, grpc, PierError, ServiceTokenSigner, type GrpcCallObserver } from '@pier/kit';
import type { AuthClient as GeneratedAuthClient } from '@pier/kit/proto/auth/v1/Auth.ts';
import type { AuthenticateResponse__Output } from '@pier/kit/proto/auth/v1/AuthenticateResponse.ts';

/** Auth's answer (proto/auth.proto's AuthenticateResponse, generated in kit); `cache_until_ms`: until when (Unix ms) the answer may be reused, under `epoch` (answer-cache.ts); 0: never. */
export type Authenticated = AuthenticateResponse__Output;

/** The full method path, as pier_grpc_client_duration_seconds names it. */
const AUTHENTICATE = '/auth.v1.Auth/Authenticate';

/** Defaults of PIER_AUTH_TIMEOUT_MS and PIER_AUTH_RECONNECT_MAX_MS. */
export const AUTH_TIMEOUT_MS = 750;
export const AUTH_RECONNECT_MAX_MS = 1000;

export interface AuthClientOptions {
  /** The gateway's own Ed25519 private JWK (PIER_GATEWAY_SERVICE_PRIVATE_KEY): auth admits only calls signed with it. */
  serviceKey: string;
  /** How long one Authenticate may take before the gateway answers 503 (PIER_AUTH_TIMEOUT_MS). */
  timeoutMs: number;
  /** The longest wait between two attempts to reconnect to auth (PIER_AUTH_RECONNECT_MAX_MS). */
  reconnectMaxMs: number;
  /** Told of each call (the gateway's pier_grpc_client_duration_seconds). */
  observe?: GrpcCallObserver;
}

/**
 * The gateway's one gRPC channel to auth. HTTP/2 multiplexes every request over it; the
 * channel is kept open (keepalive pings, no idle teardown) so no request pays a connect.
 */
export class AuthClient {
  private readonly client: GeneratedAuthClient;

  private readonly timeoutMs: number;

  private readonly observe: GrpcCallObserver | undefined;

  /** The gateway's service token, one Metadata instance until it is renewed (kit's service-caller.ts). */
  private readonly signer: ServiceTokenSigner;

  /**
   * Calls never wait for the channel to become ready (the metadata's `waitForReady` is
   * false, grpc-js's default): with auth unreachable the channel is in TRANSIENT_FAILURE and a call fails at
   * once; a call made while a connection is being attempted waits at most `timeoutMs`.
   * The reconnect backoff is capped at `reconnectMaxMs` (grpc-js: 1 s growing to 120 s),
   * so the gateway notices auth's return on its own within about that long.
   */
  constructor(target: string, options: AuthClientOptions) {
    this.timeoutMs = options.timeoutMs;
    this.signer = new ServiceTokenSigner(options.serviceKey, 'gateway');
    const Ctor = clientConstructor('auth.proto', 'auth.v1', 'Auth');
    this.client = new Ctor(target, grpc.credentials.createInsecure(), {
      // A connection whose far end vanished without a word (auth's pod replaced behind its
      // Service address: the old connection is black-holed, never reset) is found within
      // 15 s, idle or not, and the channel connects again (to the new pod). Auth's grpc-js
      // server does not limit pings (no too_many_pings).
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.client_idle_timeout_ms': 2_147_483_647,
      'grpc.enable_retries': 0,
      'grpc.initial_reconnect_backoff_ms': Math.min(1000, options.reconnectMaxMs),
      'grpc.max_reconnect_backoff_ms': options.reconnectMaxMs,
      // Channelz keeps per-call statistics for a debugging service nobody queries here.
      'grpc.enable_channelz': 0,
    }) as unknown as AuthClient['client'];
    // Timed in the call's callback rather than by the kit's observingClient interceptor:
    // a grpc-js interceptor builds an intercepting call and listener chain per call, a
    // measurable share of the gateway's CPU per request; the figures are the same.
    this.observe = options.observe;
  }

  /**
   * Asks auth who the token is in this workspace/VPC. Rejects with the domain error auth
   * sent (401 invalid key, 403, 404 ...), or 503 when auth cannot be reached.
   */
  async authenticate(token: string, workspaceId: string, vpcId: string): Promise<Authenticated> {
    const metadata = await this.signer.metadata();
    const deadline = Date.now() + this.timeoutMs;
    return new Promise((resolve, reject) => {
      const start = this.observe ? performance.now() : 0;
      const call = (retry: boolean) =>
        this.client.Authenticate({ token, workspace_id: workspaceId, vpc_id: vpcId }, metadata, { deadline }, (err, res) => {
          // The connection closed under the call (auth's pod stopping: its GOAWAY, or a
          // reset): asked once more within the same deadline; the channel connects again (to
          // another pod), or fails at once when auth is down. Authenticate changes nothing.
          if (err?.code === grpc.status.UNAVAILABLE && !retry && Date.now() < deadline) return call(true);
          this.observe?.(AUTHENTICATE, err ? (grpc.status[err.code] ?? 'UNKNOWN') : 'OK', (performance.now() - start) / 1000);
          if (!err) return resolve(res!);
          const known = fromGrpcError(err);
          // A transport failure's text names sockets and addresses; say what it means instead.
          if (known.kind === 'unavailable' && known.code === 'upstream_unavailable') {
            reject(new PierError('unavailable', 'auth service unavailable', 'upstream_unavailable'));
          } else reject(known);
        });
      call(false);
    });
  }

  /** Signs the first service token now: a key that cannot sign stops the gateway at start, not at its first request. */
  async prepare(): Promise<void> {
    try {
      await this.signer.metadata();
    } catch (err) {
      throw new Error(`PIER_GATEWAY_SERVICE_PRIVATE_KEY cannot sign (an Ed25519 private JWK, JSON, is needed): ${(err as Error).message}`, { cause: err });
    }
  }

  /** Tells auth of uses answered from the gateway's cache (last_used_at). */
  async recordUses(apiKeyIds: string[], sessionIds: string[]): Promise<void> {
    const metadata = await this.signer.metadata();
    return new Promise((resolve, reject) =>
      this.client.RecordUses({ api_key_ids: apiKeyIds, session_ids: sessionIds }, metadata, { deadline: Date.now() + 5000 }, (err) =>
        err ? reject(fromGrpcError(err)) : resolve(),
      ),
    );
  }

  /** Readiness: the channel to auth connects within `timeoutMs`. */
  ready(timeoutMs = 1000): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.waitForReady(Date.now() + timeoutMs, (err) => (err ? reject(new Error(`auth's gRPC port does not answer: ${err.message}`)) : resolve())),
    );
  }

  close(): void {
    this.client.close();
  }
}
