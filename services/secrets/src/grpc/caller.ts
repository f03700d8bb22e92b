import { ServiceCallerCheck } from '@pier/kit';

/** The one service allowed to call secrets over gRPC. */
export const ALLOWED_CALLER = 'compute';

/**
 * Admits only compute: a token signed with compute's own Ed25519 key (not auth's identity
 * key, so neither a user token nor another service can pass), of kind `service` and
 * subject `compute` (kit's service-caller.ts). Both methods require it: Check reveals which
 * secrets exist in a VPC, and Resolve hands out values.
 */
export type CallerCheck = ServiceCallerCheck;

export const CallerCheck = {
  create: (computePublicJwk: string | undefined): Promise<CallerCheck> =>
    ServiceCallerCheck.create(computePublicJwk, ALLOWED_CALLER, 'secrets', 'PIER_COMPUTE_SERVICE_PUBLIC_KEY'),
};
