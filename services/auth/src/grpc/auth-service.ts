import { PierError, pgErrorOf, serviceDefinition, unary, type Logger } from '@pier/kit';
import type { AuthenticateRequest, AuthenticateResponse, Authenticator } from '../domain/authenticate.ts';
import type { VpcLookup } from '../domain/vpcs.ts';

/** The `auth.v1.Auth` gRPC service (proto/auth.proto). */
export function authGrpcService(authenticator: Authenticator, vpcs: VpcLookup, log: Logger) {
  const guarded =
    <Req, Res>(what: string, fn: (req: Req) => Promise<Res>) =>
    async (req: Req): Promise<Res> => {
      try {
        return await fn(req);
      } catch (err) {
        if (err instanceof PierError) throw err;
        // The database being away is a reason to answer "try again" (503 `unavailable`, as
        // every service answers then, through kit's one table), not "broken".
        log.error({ err }, `${what} failed`);
        throw pgErrorOf(err) ?? err;
      }
    };
  return {
    definition: serviceDefinition('auth.proto', 'auth.v1', 'Auth'),
    implementation: {
      Authenticate: unary(guarded<AuthenticateRequest, AuthenticateResponse>('Authenticate', (req) => authenticator.authenticate(req))),
      FindVpc: unary(
        guarded<{ identity_token: string; vpc_id: string }, { found: boolean }>('FindVpc', async (req) => ({
          found: await vpcs.find(req.identity_token, req.vpc_id),
        })),
      ),
    },
  };
}
