import { clientConstructor, fromGrpcError, grpc, PierError } from '@pier/kit';

export interface Authenticated {
  user_id: string;
  email: string;
  role: string;
  identity_token: string;
  expires_in: number;
}

/** How long the gateway waits for auth before answering 503. */
const DEADLINE_MS = 5000;

/**
 * The gateway's one gRPC channel to auth. HTTP/2 multiplexes every request over it; the
 * channel is kept open (keepalive pings, no idle teardown) so no request pays a connect.
 */
export class AuthClient {
  private readonly client: grpc.Client & {
    Authenticate(req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: Authenticated) => void): void;
  };

  constructor(target: string) {
    const Ctor = clientConstructor('auth.proto', 'auth.v1', 'Auth');
    this.client = new Ctor(target, grpc.credentials.createInsecure(), {
      // At the server's default minimum ping interval, so auth never answers too_many_pings.
      'grpc.keepalive_time_ms': 300_000,
      'grpc.keepalive_timeout_ms': 10_000,
      'grpc.client_idle_timeout_ms': 2_147_483_647,
      'grpc.enable_retries': 0,
      // Channelz keeps per-call statistics for a debugging service nobody queries here.
      'grpc.enable_channelz': 0,
    }) as unknown as AuthClient['client'];
  }

  /**
   * Asks auth who the token is in this workspace/VPC. Rejects with the domain error auth
   * sent (401 invalid key, 403, 404 ...), or 503 when auth cannot be reached.
   */
  authenticate(token: string, workspaceId: string, vpcId: string): Promise<Authenticated> {
    return new Promise((resolve, reject) => {
      this.client.Authenticate({ token, workspace_id: workspaceId, vpc_id: vpcId }, new grpc.Metadata(), { deadline: Date.now() + DEADLINE_MS }, (err, res) => {
        if (!err) return resolve(res);
        const known = fromGrpcError(err);
        // A transport failure's text names sockets and addresses; say what it means instead.
        if (known.kind === 'unavailable' && known.code === 'upstream_unavailable') {
          reject(new PierError('unavailable', 'auth service unavailable', 'upstream_unavailable'));
        } else reject(known);
      });
    });
  }

  close(): void {
    this.client.close();
  }
}
