import { PierError, serviceDefinition, unary, UnavailableError, type Logger } from '@pier/kit';
import type { AuthenticateRequest, AuthenticateResponse, Authenticator } from '../domain/authenticate.ts';

/** The `auth.v1.Auth` gRPC service (proto/auth.proto). */
export function authGrpcService(authenticator: Authenticator, log: Logger) {
  return {
    definition: serviceDefinition('auth.proto', 'auth.v1', 'Auth'),
    implementation: {
      Authenticate: unary<AuthenticateRequest, AuthenticateResponse>(async (req) => {
        try {
          return await authenticator.authenticate(req);
        } catch (err) {
          if (err instanceof PierError) throw err;
          // The database being away is a reason to answer "try again" (503), not "broken".
          log.error({ err }, 'Authenticate failed');
          if (isConnectionFailure(err)) throw new UnavailableError('authentication is temporarily unavailable', 'auth_unavailable');
          throw err;
        }
      }),
    },
  };
}

function isConnectionFailure(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  return (
    e?.name === 'KnexTimeoutError' ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', '57P01', '57P03', '08006', '08001', '08003'].includes(e?.code ?? '') ||
    /Connection terminated/i.test(e?.message ?? '')
  );
}
