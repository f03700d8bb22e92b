// One lint for the whole repository, run by `pnpm lint` (and so by ./pier test and CI).
// Beyond the recommended rules it holds the layering of CONTRIBUTING.md: http -> domain <-
// store, cluster (a domain defines the ports its adapters implement), no import cycles,
// and test doubles (@pier/testing) out of production code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const adapters = ['store', 'cluster', 'http', 'sql', 'grpc', 'secrets', 'authn', 'clients', 'bootstrap'];
// The root-level wiring of a service: what builds the context and serves it.
const wiring = 'services/*/src/{server,app,main,*-wiring}.ts';
// The zones below are globs from the repository's root, wherever eslint is started.
const basePath = import.meta.dirname;

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '.pier/**',
      'deploy/crds/**',
      'deploy/images/*/.prepared/**',
      '**/dist/**',
      'packages/sdk/src/schema.ts',
      'packages/kit/src/proto/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })],
    },
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-self-import': 'error',
      'import-x/no-useless-path-segments': 'error',
      'import-x/no-duplicates': 'error',
      'no-restricted-imports': ['error', { paths: [{ name: '@pier/testing', message: 'test doubles and harnesses are for tests and benchmarks only' }] }],
    },
  },
  {
    // The wiring (server.ts, app.ts, main.ts, *-wiring.ts) builds the context from the adapters
    // and the domain; nothing below it imports it back. (The domain's block below
    // repeats this zone: a later block's options replace an earlier one's.)
    files: ['services/*/src/*/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        { basePath, zones: [{ target: 'services/*/src/*/**', from: wiring, message: 'adapters and domain never import the wiring' }] },
      ],
    },
  },
  {
    // The domain holds the rules and defines its ports; it reaches no adapter and no transport.
    files: ['services/*/src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@pier/testing', message: 'test doubles and harnesses are for tests and benchmarks only' },
            ...['express', 'knex', 'pg', 'dockerode', '@kubernetes/client-node', 'mysql2', '@grpc/grpc-js'].map((name) => ({
              name,
              message: 'the domain defines a port for this; an adapter implements it',
            })),
          ],
        },
      ],
      // Checked on the resolved path, so it holds at any depth (domain/<feature>/ folders) and
      // tells compute's adapter folder src/edge/ from the feature folder domain/edge/.
      'import-x/no-restricted-paths': [
        'error',
        {
          basePath,
          zones: [
            {
              target: 'services/*/src/domain/**',
              from: `services/*/src/{${[...adapters, 'edge'].join(',')}}/**`,
              message: 'the domain depends on no adapter: define a port in domain/ instead',
            },
            { target: 'services/*/src/domain/**', from: wiring, message: 'the domain is wired by server.ts; it never imports the wiring' },
          ],
        },
      ],
    },
  },
  {
    // Tests, benchmarks and the test package may use the harnesses, and loosely typed JSON.
    files: ['**/test/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'packages/testing/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
