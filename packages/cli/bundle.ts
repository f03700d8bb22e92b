// Bundles the CLI, the SDK and commander into one file with no dependencies and no install
// scripts: what `npm install -g` of the packed package installs as `pier`.
import { chmod } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const CLI_ROOT = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_OUTFILE = path.join(CLI_ROOT, 'dist', 'pier.cjs');

export async function bundle(outfile = DEFAULT_OUTFILE): Promise<string> {
  await build({
    entryPoints: [path.join(CLI_ROOT, 'src', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    banner: { js: '#!/usr/bin/env node' },
    legalComments: 'none',
    logLevel: 'warning',
  });
  await chmod(outfile, 0o755);
  return outfile;
}
