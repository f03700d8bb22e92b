/**
 * `node --import tsx deploy/platform/bundle.ts [root]`: each service as one ESM file,
 * <root>/dist/<service>.mjs, which plain `node` runs (pier-platform does when it exists).
 * Why: under `node --import tsx` compute idles at ~260 MB resident, with the bundle at ~144
 * (bench/process-memory.ts). tsx's hooks run on a thread of their own, a second V8 heap
 * (31 MB more for an empty script, more as it compiles each file), and the main heap keeps
 * the source maps tsx registers (bench/heap-retainers.ts: 83 MB used against 52).
 * `root` (default: this repository) is a tree with the services' sources and their installed
 * dependencies: the platform image's prepare.sh bundles its own .prepared/app.
 *
 * What a bundle must keep working:
 * - files read relative to a module (kit's proto/, the gateway's console dist/): each module's
 *   `import.meta.url` is made its own file's URL again, relative to the bundle, so the
 *   bundle must stay at <root>/dist beside the sources' tree, as it does in the image;
 * - CommonJS dependencies' `require` of node's modules: a real `require` is given to the bundle;
 * - what is never loaded here stays outside: knex's other dialects' drivers, pg-native, and
 *   compiled add-ons (ssh2's optional crypto binding, which falls back to JavaScript; the
 *   image installs none).
 */
import { build, type Plugin } from 'esbuild';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const BUNDLED_SERVICES = ['auth', 'compute', 'databases', 'gateway', 'secrets', 'events'] as const;

/** Required only by code paths Pier never takes (other databases' knex dialects, pg's native binding). */
const NEVER_LOADED = ['sqlite3', 'better-sqlite3', 'tedious', 'mysql', 'mariadb', 'mariadb/callback', 'oracledb', 'pg-query-stream', 'pg-native'];

const BANNER = [
  "import { createRequire as pierCreateRequire } from 'node:module';",
  "import { fileURLToPath as pierFileURLToPath } from 'node:url';",
  'const require = pierCreateRequire(import.meta.url);',
  "/** A bundled module's own file, from its path relative to the bundle. */",
  'const pierModuleFile = (relative) => pierFileURLToPath(new URL(relative, import.meta.url));',
].join('\n');

/**
 * Each module that finds files beside itself finds them where it came from: our modules'
 * `import.meta.url` and CommonJS dependencies' `__dirname`/`__filename` (grpc-js' channelz
 * protos, dockerode's BuildKit protos) are their own file's again, relative to the bundle.
 */
function ownModuleFiles(outdir: string): Plugin {
  const relative = (file: string) => JSON.stringify(path.relative(outdir, file).split(path.sep).join('/'));
  return {
    name: 'own-module-files',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        return { contents: source.replaceAll('import.meta.url', `new URL(${relative(args.path)}, import.meta.url).href`), loader: 'ts' };
      });
      b.onLoad({ filter: /\.c?js$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!/\b__(dirname|filename)\b/.test(source)) return undefined;
        // Declared in the module's own scope: esbuild wraps each CommonJS module in a function.
        const own = `var __filename = pierModuleFile(${relative(args.path)}), __dirname = pierModuleFile(${relative(path.dirname(args.path) + '/')});\n`;
        return { contents: own + source, loader: 'js' };
      });
    },
  };
}

/** Compiled add-ons stay where they are, and are required (and may be missing) at run time. */
const addonsOutside: Plugin = {
  name: 'addons-outside',
  setup(b) {
    b.onResolve({ filter: /\.node$/ }, (args) => ({ path: args.path, external: true }));
  },
};

/**
 * V8 keeps a script's source for as long as it runs, one byte a character only when every
 * character is Latin-1: a single "–" in a dependency's comment doubles the 14 MB of compute's
 * bundle. esbuild escapes strings and identifiers already; what is left is in comments, and
 * a \u escape means the same character anywhere else JavaScript would meet it.
 */
export function asciiOnly(code: string): string {
  return code.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export async function bundleServices(root: string): Promise<string[]> {
  const outdir = path.join(root, 'dist');
  const written = [];
  for (const service of BUNDLED_SERVICES) {
    const outfile = path.join(outdir, `${service}.mjs`);
    const { outputFiles } = await build({
      absWorkingDir: root,
      entryPoints: [path.join(root, 'services', service, 'src', 'main.ts')],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20.19',
      external: NEVER_LOADED,
      banner: { js: BANNER },
      plugins: [ownModuleFiles(outdir), addonsOutside],
      // Stack traces name the function; a source map would cost the memory the bundle saves.
      keepNames: true,
      legalComments: 'none',
      logLevel: 'warning',
      write: false,
    });
    await mkdir(outdir, { recursive: true });
    await writeFile(outfile, asciiOnly(outputFiles[0]!.text));
    written.push(outfile);
  }
  return written;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../..'));
  for (const file of await bundleServices(root)) console.log(`bundled ${path.relative(root, file)}`);
}
