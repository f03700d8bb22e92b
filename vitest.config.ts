import { configDefaults, defineConfig } from 'vitest/config';

// Files run alone, after the rest (./pier test's second step): the rolling upgrade puts
// 50 requests a second and twelve pods on the machine for minutes, which starves the other
// suites on 2 cores (and theirs it). PIER_TEST_SET picks: `shared` (the default: all but
// these), `alone` (these only), `all` (./pier test -- <files>: whatever is named).
const ALONE = ['test/kubernetes/rolling-upgrade.test.ts'];
const set = process.env.PIER_TEST_SET ?? 'shared';

export default defineConfig({
  test: {
    include: set === 'alone' ? ALONE : ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: set === 'shared' ? [...configDefaults.exclude, ...ALONE] : configDefaults.exclude,
    // Starts the shared PostgreSQL + NATS containers once per run (see the file).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Forks isolate native modules and process-wide state; 2 workers = 2 cores here.
    pool: 'forks',
    maxWorkers: 2,
    // The default reporter ends with the "Test Files / Tests / Duration" summary; the JSON
    // one lets ./pier test close with a plain "tests: N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: set === 'shared' ? '.pier/test-results.json' : `.pier/test-results-${set}.json` }]],
  },
});
