// `pnpm --filter @pier/cli build`: dist/pier.cjs (see bundle.ts). `pnpm pack` then makes the
// package that `npm install -g` installs.
import path from 'node:path';
import { bundle } from './bundle.ts';

process.stdout.write(`built ${path.relative(process.cwd(), await bundle())}\n`);
