/**
 * End-to-end harness: all Pier services in-process plus the gateway, on free loopback
 * ports, against a fresh database on the suite's PostgreSQL and the suite's NATS.
 *
 *   import { startPlatform } from '../support/platform.ts';
 *   const p = await startPlatform();                 // in beforeAll; p.stop() in afterAll
 *   const owner = p.api(p.bootstrap.token);          // Authorization: Bearer <token>
 *   const { status, body, headers } = await owner.get(`/api/v1/workspaces/${p.bootstrap.workspaceId}/api-keys`);
 *   await owner.post(path, { name: 'ci' });           // also put, patch, delete, request(method, path, body, opts)
 *   await owner.post(path, undefined, { rawBody: '{bad', headers: { 'x-request-id': 'r1' } });
 *   p.api()                                          // no Authorization header at all
 *   p.apiAt(p.serviceUrls.auth, { 'x-pier-identity': token })   // straight to one service
 *
 * Options (all optional):
 *   env: { auth?, compute?, databases?, secrets?, gateway? }  environment overrides per
 *        service (strings, exactly as the service's env — e.g. cluster adapter settings for
 *        compute, or `gateway: { PIER_COMPUTE_URL: 'http://127.0.0.1:<port>' }` to point a
 *        route elsewhere); `undefined` removes a variable the harness would set.
 *   bootstrapEmail   the bootstrap owner (default owner@localhost)
 *   logLevel         every service's log level (default $PIER_TEST_LOG_LEVEL or 'warn')
 *   gatewayLog       a Writable receiving the gateway's pino lines at level info
 *   computeLog       the same for compute
 *   postgresAdminUrl / natsUrl  default to inject('postgresAdminUrl') / inject('natsUrl'), else
 *                    $PIER_TEST_POSTGRES_URL / $PIER_TEST_NATS_URL
 *
 * Returns: gatewayUrl; bootstrap { token, workspaceId, vpcId, configDir, email } (read
 * from the credentials.json/config.json auth wrote into a temp PIER_CONFIG_DIR);
 * serviceUrls { auth, authGrpc (host:port), compute?, databases?, secrets? }; keys
 * { privateJwk, publicJwk } (sign identity tokens with `signIdentity` from @pier/kit);
 * database { adminUrl, urls } (adminUrl is a superuser URL of this test's database);
 * natsUrl; api(token?); apiAt(url, headers?); stop() — stops everything, drops the
 * database and removes the config dir.
 *
 * The vitest-free core is './platform-core.ts' (`startPlatformAt`), used by `pnpm bench`.
 */
import { inject } from 'vitest';
import { startPlatformAt, type Platform, type PlatformOptions } from './platform-core.ts';

export type { Platform, PlatformOptions } from './platform-core.ts';
export type { Api, ApiResponse } from './api.ts';
export { freePort } from '@pier/testing';

export async function startPlatform(opts: Partial<PlatformOptions> = {}): Promise<Platform> {
  return startPlatformAt({
    ...opts,
    postgresAdminUrl: opts.postgresAdminUrl ?? inject('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL!,
    natsUrl: opts.natsUrl ?? inject('natsUrl') ?? process.env.PIER_TEST_NATS_URL!,
  });
}
