// Test doubles and harnesses: imported by tests and benchmarks only. Production code may
// not import this package (ESLint's no-restricted-imports enforces it in every src/).
export * from './database.ts';
export * from './harness.ts';
export * from './events.ts';
export * from './docker.ts';
export * from './fake-kubernetes.ts';
export * from './real-kubernetes.ts';
export * from './socket-link.ts';
export * from './process.ts';
export * from './sql-clients.ts';
export * from './dns-server.ts';
export * from './url-corpus.ts';
export * from './shell-client.ts';
export * from './event-stream.ts';
export * from './git-server.ts';
export * from './s3-test-server.ts';
export * from './edge-servers.ts';
export * from './probes.ts';
export * from './pod-security.ts';
