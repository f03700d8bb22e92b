import { isUuid, PierError, pgErrorOf, serviceDefinition, unary, type grpc, type ServiceCallerCheck } from '@pier/kit';
import { authenticate, type AuthenticateRequest, type AuthenticateResponse } from '../domain/authenticate.ts';
import type { AuthContext } from '../domain/context.ts';
import { findVpc } from '../domain/vpcs.ts';
import type { FindVpcRequest__Output } from '@pier/kit/proto/auth/v1/FindVpcRequest.ts';
import type { FindVpcResponse } from '@pier/kit/proto/auth/v1/FindVpcResponse.ts';
import type { RecordUsesRequest__Output } from '@pier/kit/proto/auth/v1/RecordUsesRequest.ts';

/**
 * The `auth.v1.Auth` gRPC service (proto/auth.proto). Authenticate and RecordUses are the
 * gateway's: they need its service token (`gateway`, kit's service-caller.ts), or anything
 * that reaches the port could try tokens without the gateway's rate limits, or mark keys
 * used. FindVpc is asked on a user's behalf and carries that user's identity token, which
 * is its credential.
 */
export function authGrpcService(ctx: AuthContext, gateway: ServiceCallerCheck) {
  const guarded =
    <Req, Res>(what: string, fn: (req: Req) => Promise<Res>) =>
    async (req: Req): Promise<Res> => {
      try {
        return await fn(req);
      } catch (err) {
        if (err instanceof PierError) throw err;
        // The database being away is a reason to answer "try again" (503 `unavailable`, as
        // every service answers then, through kit's one table), not "broken".
        ctx.log.error({ err }, `${what} failed`);
        throw pgErrorOf(err) ?? err;
      }
    };
  return {
    definition: serviceDefinition('auth.proto', 'auth.v1', 'Auth'),
    implementation: {
      Authenticate: unary(async (req: AuthenticateRequest, metadata: grpc.Metadata) => {
        await gateway.admit(metadata);
        return guarded<AuthenticateRequest, AuthenticateResponse>('Authenticate', (r) => authenticate(ctx, r))(req);
      }),
      FindVpc: unary(
        guarded<FindVpcRequest__Output, FindVpcResponse>('FindVpc', async (req) => ({
          found: await findVpc(ctx, req.identity_token, req.vpc_id),
        })),
      ),
      // Uses a gateway answered from its cache; ids that are not UUIDs are not ours and are dropped.
      RecordUses: unary(async (req: RecordUsesRequest__Output, metadata: grpc.Metadata) => {
        await gateway.admit(metadata);
        for (const id of req.api_key_ids ?? []) if (isUuid(id)) ctx.uses.touch('api_keys', id);
        for (const id of req.session_ids ?? []) if (isUuid(id)) ctx.uses.touch('cli_sessions', id);
        return {};
      }),
    },
  };
}
