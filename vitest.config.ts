import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Starts the shared PostgreSQL + NATS containers once per run (see the file).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Forks isolate native modules and process-wide state; 2 workers = 2 cores here.
    pool: 'forks',
    maxWorkers: 2,
    // The default reporter ends with the "Test Files / Tests / Duration" summary; the JSON
    // one lets ./pier test close with a plain "tests: N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.pier/test-results.json' }]],
  },
});
