// A build context as the Engine's build API (and BuildKit's local source) takes it: a tar of
// the context directory, `.dockerignore` applied (the API does not apply it; the docker CLI
// does), `.git` left out, links kept as links (never followed: nothing outside the source
// can be read through one), owners zeroed. The context directory, the Dockerfile and a
// `.dockerignore` must lie inside the source, resolved on disk (a git source may hold links
// to anywhere: compute would read its own files, or /dev/zero, through one); a Dockerfile
// outside the context is added to the tar under its own name so the builder finds it.
import { createReadStream } from 'node:fs';
import { lstat, readFile, readdir, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import dockerignore from '@balena/dockerignore';
import tar from 'tar-stream';
import { BuildFailedError } from '../domain/builds/builder-port.ts';

// CommonJS (`module.exports = factory`), typed as a default export.
const ignore = dockerignore as unknown as typeof dockerignore.default;

/** Where a Dockerfile from outside the context goes in the tar. */
export const OUTSIDE_DOCKERFILE = '.pier.Dockerfile';

export interface BuildContext {
  /** The tar, streamed as it is read from disk. */
  tar: Readable;
  /** The Dockerfile's path inside the tar. */
  dockerfile: string;
  /** The Dockerfile's text (the images it builds from are checked before the engine sees them). */
  dockerfileText: string;
}

function within(root: string, inside: string): boolean {
  return inside === root || inside.startsWith(root + path.sep);
}

/** `rel` resolved on disk below `root`, or a BuildFailedError naming `field`. */
async function inside(root: string, rel: string, field: string, kind: 'file' | 'directory'): Promise<string> {
  const real = await realpath(path.join(root, rel)).catch(() => undefined);
  if (!real) throw new BuildFailedError(`${field}: ${rel} does not exist in the source`);
  if (!within(root, real)) throw new BuildFailedError(`${field}: ${rel} leads outside the source`);
  const st = await stat(real);
  if (kind === 'file' ? !st.isFile() : !st.isDirectory()) throw new BuildFailedError(`${field}: ${rel} is not a ${kind}`);
  return real;
}

/** The context's `.dockerignore` ('' when there is none), read only where it lies inside the source. */
async function readIgnoreFile(root: string, context: string): Promise<string> {
  const at = path.join(context, '.dockerignore');
  if (!(await lstat(at).catch(() => undefined))) return '';
  return readFile(await inside(root, path.relative(root, at), '.dockerignore', 'file'), 'utf8');
}

/** Packs `contextDir` of the source at `sourceRoot` with `dockerfilePath` (both relative to the root). */
export async function packContext(sourceRoot: string, contextDir: string, dockerfilePath: string): Promise<BuildContext> {
  const root = await realpath(sourceRoot);
  const context = await inside(root, contextDir, 'context_dir', 'directory');
  const dockerfile = await inside(root, dockerfilePath, 'dockerfile_path', 'file');
  const inContext = within(context, dockerfile) ? path.relative(context, dockerfile).split(path.sep).join('/') : undefined;

  const rules = ignore();
  const ignoreFile = await readIgnoreFile(root, context);
  rules.add(ignoreFile.split('\n'));
  rules.add('.git');
  // Exceptions (`!pattern`) can reach into an ignored directory, which then must be walked.
  const hasExceptions = /^\s*!/m.test(ignoreFile);

  const pack = tar.pack();
  const entry = (header: tar.Header | (Partial<tar.Header> & { name: string }), body?: Buffer | Readable) =>
    new Promise<void>((resolve, reject) => {
      const done = (err?: Error | null) => (err ? reject(err) : resolve());
      if (body === undefined) pack.entry(header, done);
      else if (Buffer.isBuffer(body)) pack.entry(header, body, done);
      else body.on('error', reject).pipe(pack.entry(header, done) as unknown as NodeJS.WritableStream);
    });

  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const full = path.join(dir, name);
      const relPath = rel ? `${rel}/${name}` : name;
      const st = await lstat(full);
      const kept = relPath === inContext || relPath === '.dockerignore' || !rules.ignores(relPath);
      const common = { name: relPath, mode: st.mode & 0o777, mtime: st.mtime, uid: 0, gid: 0 };
      if (st.isDirectory()) {
        if (!kept && !hasExceptions) continue;
        if (kept) await entry({ ...common, type: 'directory' });
        await walk(full, relPath);
      } else if (!kept) {
        continue;
      } else if (st.isSymbolicLink()) {
        await entry({ ...common, type: 'symlink', linkname: await readlink(full) });
      } else if (st.isFile()) {
        await entry({ ...common, type: 'file', size: st.size }, createReadStream(full));
      }
      // Sockets, FIFOs and devices: never part of a context.
    }
  };

  void (async () => {
    await walk(context, '');
    if (!inContext) {
      const st = await stat(dockerfile);
      await entry({ name: OUTSIDE_DOCKERFILE, mode: 0o644, mtime: st.mtime, uid: 0, gid: 0, type: 'file', size: st.size }, await readFile(dockerfile));
    }
    pack.finalize();
  })().catch((err: unknown) => pack.destroy(err as Error));

  // A Node stream for the Engine API client (tar-stream's are streamx streams).
  return { tar: Readable.from(pack), dockerfile: inContext ?? OUTSIDE_DOCKERFILE, dockerfileText: await readFile(dockerfile, 'utf8') };
}
