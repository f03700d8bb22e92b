import { importIdentityKey, natsTarget, ServiceCallerCheck, startService, type RunningService } from '@pier/kit';
import { authRestRoutes } from './app.ts';
import { CachingIdentityMinter } from './authn/identity-minter.ts';
import { OidcVerifier } from './authn/oidc.ts';
import { bootstrap, type BootstrapResult } from './bootstrap/bootstrap.ts';
import { HttpVpcUsage, type UsageTarget } from './clients/vpc-usage.ts';
import { EpochBroadcaster } from './clients/epoch-broadcaster.ts';
import type { AuthConfig } from './config.ts';
import type { AuthContext } from './domain/context.ts';
import { authGrpcService } from './grpc/auth-service.ts';
import { CredentialStore } from './store/credentials.ts';
import { LastUsedRecorder } from './store/last-used.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexAuthStore } from './store/store.ts';

export interface RunningAuth extends RunningService {
  grpcPort: number;
  /**
   * What bootstrap did or found; undefined when PIER_BOOTSTRAP=false or the database
   * was already set up without it. `token` is present only on the start that created it.
   */
  bootstrap?: BootstrapResult;
}

export interface StartOptions {
  /** Where log lines go (default stdout); tests read them to check nothing secret is written. */
  logDestination?: NodeJS.WritableStream;
}

/** Starts auth: its schema, bootstrap of an empty database, REST and gRPC. */
export async function start(config: AuthConfig, options: StartOptions = {}): Promise<RunningAuth> {
  const running = await startService({
    name: 'auth',
    config,
    httpPort: config.PIER_AUTH_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: options.logDestination,
    async wire({ db, logger, verifier, relay }) {
      const privateKey = await importIdentityKey(config.PIER_IDENTITY_PRIVATE_KEY);
      const store = new KnexAuthStore(db);
      const boot = config.PIER_BOOTSTRAP
        ? await bootstrap(
            store,
            { email: config.PIER_BOOTSTRAP_EMAIL, configDir: config.PIER_CONFIG_DIR, apiUrl: config.PIER_PUBLIC_URL, apiKey: config.PIER_BOOTSTRAP_API_KEY },
            logger,
          )
        : undefined;

      const lastUsed = new LastUsedRecorder(db, logger);
      const installation = await store.installation();
      const minter = new CachingIdentityMinter(privateKey, config.PIER_IDENTITY_TTL_SECONDS);
      const oidc =
        config.PIER_OIDC_ISSUER && config.PIER_OIDC_JWKS_URL && config.PIER_OIDC_AUDIENCE
          ? new OidcVerifier({ issuer: config.PIER_OIDC_ISSUER, jwksUrl: config.PIER_OIDC_JWKS_URL, audience: config.PIER_OIDC_AUDIENCE })
          : undefined;
      const targets: UsageTarget[] = [
        { service: 'compute', baseUrl: config.PIER_COMPUTE_URL },
        { service: 'databases', baseUrl: config.PIER_DATABASES_URL },
        { service: 'secrets', baseUrl: config.PIER_SECRETS_URL },
      ].filter((t): t is UsageTarget => t.baseUrl !== undefined);
      if (targets.length < 3) {
        logger.warn(
          { asked: targets.map((t) => t.service) },
          'not every resource service URL is configured; VPC deletion only asks the configured ones whether a VPC is empty',
        );
      }
      const usage = new HttpVpcUsage(targets, () => minter.service('auth'));
      const caches = new EpochBroadcaster(db, installation, natsTarget(config), config.PIER_AUTH_CACHE_LEASE_MS, config.PIER_AUTH_CACHE_CLOCK_SKEW_MS, logger);
      const gateway = await ServiceCallerCheck.create(config.PIER_GATEWAY_SERVICE_PUBLIC_KEY, 'gateway', 'auth', 'PIER_GATEWAY_SERVICE_PUBLIC_KEY');
      if (!gateway.configured) logger.warn('PIER_GATEWAY_SERVICE_PUBLIC_KEY is not set: every Authenticate and RecordUses call will be refused');
      const ctx: AuthContext = {
        store,
        credentials: new CredentialStore(db),
        jwt: oidc,
        minter,
        identities: verifier,
        uses: lastUsed,
        caches,
        usage,
        installation,
        log: logger,
        eventsWritten: () => relay.poke(),
        now: () => new Date(),
      };
      return {
        routes: authRestRoutes(ctx),
        grpc: { port: config.PIER_AUTH_GRPC_PORT, services: [authGrpcService(ctx, gateway)] },
        background: [lastUsed, caches],
        extra: { bootstrap: boot },
        describe: { oidc: oidc !== undefined },
      };
    },
  });
  return { ...running, grpcPort: running.grpcPort! };
}
