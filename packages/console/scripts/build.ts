// Builds the console into dist/ with Vite and prints the initial JavaScript's gzipped size,
// failing over the budget (250 KB). `--if-needed` skips the build when dist/ was built from
// the same inputs (its .inputs stamp: a hash of the sources, the SDK and this file), so
// `./pier up`, `./pier test` and the platform image call it on every run for nothing.
//
//   node --import tsx packages/console/scripts/build.ts [--if-needed]
//   node --import tsx packages/console/scripts/build.ts --dev   (Vite's dev server; API at PIER_API_URL)
import { createHash } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { InlineConfig } from 'vite';

export const CONSOLE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CONSOLE_DIST = path.join(CONSOLE_ROOT, 'dist');
const SDK_SRC = path.resolve(CONSOLE_ROOT, '../sdk/src');
const STAMP = '.inputs';
/** The budget for the JavaScript a first visit loads, gzipped. */
export const INITIAL_JS_BUDGET_BYTES = 250 * 1024;

export interface ConsoleBuild {
  dir: string;
  /** False when --if-needed found dist/ current. */
  built: boolean;
  /** Gzipped bytes of the JavaScript index.html loads (there is no lazy chunk). */
  initialJsGzipBytes: number;
}

function viteConfig(): InlineConfig {
  return {
    root: CONSOLE_ROOT,
    configFile: false,
    logLevel: 'warn',
    // Preact's automatic JSX runtime; no Babel plugin needed.
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: CONSOLE_DIST,
      emptyOutDir: true,
      // Everything from files: the gateway's Content-Security-Policy allows no inline script or style.
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      target: 'es2022',
      sourcemap: false,
      reportCompressedSize: false,
    },
    server: { proxy: { '/api': { target: process.env.PIER_API_URL ?? 'http://127.0.0.1:7100', changeOrigin: true } } },
  } as InlineConfig;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out.sort();
}

async function inputsHash(): Promise<string> {
  const h = createHash('sha256');
  const files = [
    ...(await filesUnder(path.join(CONSOLE_ROOT, 'src'))),
    ...(await filesUnder(path.join(CONSOLE_ROOT, 'public'))),
    ...(await filesUnder(SDK_SRC)),
    path.join(CONSOLE_ROOT, 'index.html'),
    path.join(CONSOLE_ROOT, 'package.json'),
    fileURLToPath(import.meta.url),
  ];
  for (const f of files)
    h.update(path.relative(CONSOLE_ROOT, f))
      .update('\0')
      .update(await readFile(f))
      .update('\0');
  return h.digest('hex');
}

async function initialJsGzipBytes(): Promise<number> {
  const html = await readFile(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
  const scripts = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="([^"]+\.js)"/g)].map((m) => m[1]!);
  let total = 0;
  for (const s of new Set(scripts)) total += gzipSync(await readFile(path.join(CONSOLE_DIST, s))).length;
  return total;
}

export async function buildConsole(opts: { ifNeeded?: boolean } = {}): Promise<ConsoleBuild> {
  const hash = await inputsHash();
  if (opts.ifNeeded) {
    const stamp = await readFile(path.join(CONSOLE_DIST, STAMP), 'utf8').catch(() => '');
    if (stamp === hash && (await stat(path.join(CONSOLE_DIST, 'index.html')).catch(() => null))) {
      return { dir: CONSOLE_DIST, built: false, initialJsGzipBytes: await initialJsGzipBytes() };
    }
  }
  const { build } = await import('vite');
  // Vite follows NODE_ENV, which vitest sets to `test`: the files served are always a production build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ ...viteConfig(), mode: 'production' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  const bytes = await initialJsGzipBytes();
  if (bytes > INITIAL_JS_BUDGET_BYTES) {
    throw new Error(`the console's initial JavaScript is ${(bytes / 1024).toFixed(1)} KB gzipped, over the ${INITIAL_JS_BUDGET_BYTES / 1024} KB budget`);
  }
  await writeFile(path.join(CONSOLE_DIST, STAMP), hash);
  return { dir: CONSOLE_DIST, built: true, initialJsGzipBytes: bytes };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--dev')) {
    const { createServer } = await import('vite');
    const server = await createServer(viteConfig());
    await server.listen();
    server.printUrls();
  } else {
    const started = performance.now();
    const r = await buildConsole({ ifNeeded: process.argv.includes('--if-needed') });
    const kb = (r.initialJsGzipBytes / 1024).toFixed(1);
    console.log(
      r.built
        ? `console built in ${Math.round(performance.now() - started)} ms: ${r.dir}; initial JS ${kb} KB gzipped (budget ${INITIAL_JS_BUDGET_BYTES / 1024} KB)`
        : `console up to date: ${r.dir}; initial JS ${kb} KB gzipped`,
    );
  }
}
