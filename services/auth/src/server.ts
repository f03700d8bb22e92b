import {
  close,
  createDb,
  migrate,
  createLogger,
  IdentityVerifier,
  importIdentityKey,
  listen,
  OutboxRelay,
  startGrpcServer,
  stopGrpcServer,
  type RunningService,
} from '@pier/kit';
import { createAuthApp } from './app.ts';
import { CachingIdentityMinter } from './authn/identity-minter.ts';
import { OidcVerifier } from './authn/oidc.ts';
import { bootstrap, type BootstrapResult } from './bootstrap/bootstrap.ts';
import { HttpVpcUsage, type UsageTarget } from './clients/vpc-usage.ts';
import type { AuthConfig } from './config.ts';
import { Authenticator } from './domain/authenticate.ts';
import { authGrpcService } from './grpc/auth-service.ts';
import { CredentialStore } from './store/credentials.ts';
import { LastUsedRecorder } from './store/last-used.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { Store } from './store/store.ts';

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

/** Starts auth: migrates its schema, bootstraps an empty database, then serves REST and gRPC. */
export async function start(config: AuthConfig, options: StartOptions = {}): Promise<RunningAuth> {
  const logger = createLogger('auth', config.PIER_LOG_LEVEL, options.logDestination);
  const db = createDb(config.PIER_DATABASE_URL, SCHEMA);
  const cleanups: (() => Promise<void>)[] = [() => db.destroy()];
  const stopAll = async () => {
    for (const fn of cleanups.reverse()) await fn().catch((err) => logger.warn({ err: String(err) }, 'error while stopping'));
  };
  try {
    await migrate(db, SCHEMA, migrations);
    const privateKey = await importIdentityKey(config.PIER_IDENTITY_PRIVATE_KEY);
    const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
    const store = new Store(db);

    const boot = config.PIER_BOOTSTRAP
      ? await bootstrap(store, { email: config.PIER_BOOTSTRAP_EMAIL, configDir: config.PIER_CONFIG_DIR, apiUrl: config.PIER_PUBLIC_URL }, logger)
      : undefined;

    const relay = new OutboxRelay(db, 'auth', config.PIER_NATS_URL, logger);
    relay.start();
    cleanups.push(() => relay.stop());
    const lastUsed = new LastUsedRecorder(db, logger);
    lastUsed.start();
    cleanups.push(() => lastUsed.stop());

    const minter = new CachingIdentityMinter(privateKey, config.PIER_IDENTITY_TTL_SECONDS);
    const oidc =
      config.PIER_OIDC_ISSUER && config.PIER_OIDC_JWKS_URL && config.PIER_OIDC_AUDIENCE
        ? new OidcVerifier({ issuer: config.PIER_OIDC_ISSUER, jwksUrl: config.PIER_OIDC_JWKS_URL, audience: config.PIER_OIDC_AUDIENCE })
        : undefined;
    const authenticator = new Authenticator({
      credentials: new CredentialStore(db),
      createUser: (email) => store.users.findOrCreate(email),
      jwt: oidc,
      minter,
      uses: lastUsed,
    });
    const grpc = await startGrpcServer(config.PIER_BIND_HOST, config.PIER_AUTH_GRPC_PORT, [authGrpcService(authenticator, logger)]);
    cleanups.push(() => stopGrpcServer(grpc.server));

    const targets: UsageTarget[] = [
      { service: 'compute', baseUrl: config.PIER_COMPUTE_URL },
      { service: 'databases', baseUrl: config.PIER_DATABASES_URL },
      { service: 'secrets', baseUrl: config.PIER_SECRETS_URL },
    ].filter((t): t is UsageTarget => t.baseUrl !== undefined);
    if (targets.length < 3) {
      logger.warn({ asked: targets.map((t) => t.service) }, 'not every resource service URL is configured; VPC deletion only asks the configured ones whether a VPC is empty');
    }
    const usage = new HttpVpcUsage(targets, () => minter.service('auth'));
    const app = createAuthApp({ db, logger, verifier, usage, lastUsed });
    const http = await listen(app, config.PIER_AUTH_HTTP_PORT, config.PIER_BIND_HOST);
    cleanups.push(() => close(http.server));

    logger.info({ httpPort: http.port, grpcPort: grpc.port, oidc: oidc !== undefined }, 'auth listening');
    return { name: 'auth', httpPort: http.port, grpcPort: grpc.port, bootstrap: boot, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
