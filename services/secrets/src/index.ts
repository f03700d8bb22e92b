export { start, type StartOptions, type RunningSecrets } from './server.ts';
export { readConfig, secretsEnv, defaultStoreDir, type SecretsConfig } from './config.ts';
export { SecretsClient, type SecretsClientOptions, type SecretRef, type MissingSecretRef, type ResolvedSecretRef } from './grpc/client.ts';
export { secretsRoutes } from './app.ts';
