// One lint for the whole repository, run by `pnpm lint` (and so by ./pier test and CI).
// Beyond the recommended rules it holds the layering of design.md: http -> domain <-
// store, cluster (a domain defines the ports its adapters implement), no import cycles,
// and test doubles (@pier/testing) out of production code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const adapters = ['store', 'cluster', 'http', 'sql', 'grpc', 'secrets', 'authn', 'clients', 'bootstrap'];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.pier/**', 'deploy/crds/**', 'deploy/images/*/.prepared/**', '**/dist/**', 'packages/sdk/src/schema.ts'] },
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
          patterns: [{ group: adapters.map((dir) => `../${dir}/*`), message: 'the domain depends on no adapter: define a port in domain/ instead' }],
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
