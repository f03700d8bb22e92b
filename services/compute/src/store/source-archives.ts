// Uploaded build sources, on compute's disk until their build has run: each archive is
// validated entry by entry while it streams in (tar-stream) and unpacked under
// `<root>/<build id>/source`. Refused: anything that is not a tar (or gzip'd tar), absolute
// paths, `..`, links whose target lies outside the archive, devices and FIFOs, and an
// archive that unpacks to more than its limit — counted as written: a hard link becomes a
// copy of its file, so it counts that file's size (a tar header of 512 bytes would otherwise
// write as much as the largest file, again and again). Writes never go through a link: every
// parent directory is resolved on disk and must lie inside the root.
import { createWriteStream } from 'node:fs';
import { copyFile, lstat, mkdir, readdir, realpath, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { InputError, PayloadTooLargeError, PierError } from '@pier/kit';
import type { SourceArchives } from '../domain/builds/builder-port.ts';

export interface SourceArchiveLimits {
  /** Bytes the files of one archive may add up to once unpacked. */
  unpackedBytes: number;
  /** Entries one archive may hold. */
  entries: number;
}

/** What an archive may still take: entries, and bytes written to disk. */
interface Budget {
  entry(): void;
  write(bytes: number): void;
}

function refused(why: string): InputError {
  return new InputError(`archive: ${why}`, 'invalid_archive', { field: 'archive' });
}

/** `inside` is `root` or below it. */
function within(root: string, inside: string): boolean {
  return inside === root || inside.startsWith(root + path.sep);
}

/** An entry's path, normalised and relative to the archive's root; refuses what escapes it. */
export function entryPath(name: string): string {
  if (name.includes('\0')) throw refused('an entry name holds a NUL character');
  if (name.startsWith('/') || /^[A-Za-z]:[\\/]/.test(name)) throw refused(`${name}: absolute paths are not allowed`);
  if (name.includes('\\')) throw refused(`${name}: backslashes are not allowed in entry names`);
  if (name.split('/').includes('..')) throw refused(`${name}: escapes the archive's root (..)`);
  return path.posix
    .normalize(name)
    .replace(/^(\.\/)+/, '')
    .replace(/\/+$/, '');
}

/** The first `n` bytes of a stream (fewer if it is shorter), and the stream with them still in it. */
async function peek(body: Readable, n: number): Promise<{ head: Buffer; stream: Readable }> {
  const chunks: Buffer[] = [];
  let length = 0;
  let ended = false;
  while (length < n && !ended) {
    const chunk = body.read() as Buffer | null;
    if (chunk) {
      chunks.push(chunk);
      length += chunk.length;
      continue;
    }
    if (body.readableEnded) break;
    ended = await new Promise<boolean>((resolve, reject) => {
      const settle = (fn: () => void) => {
        body.off('readable', onReadable);
        body.off('end', onEnd);
        body.off('error', onError);
        fn();
      };
      const onReadable = () => settle(() => resolve(false));
      const onEnd = () => settle(() => resolve(true));
      const onError = (err: Error) => settle(() => reject(err));
      body.on('readable', onReadable);
      body.on('end', onEnd);
      body.on('error', onError);
    });
  }
  const head = Buffer.concat(chunks);
  if (ended || body.readableEnded) return { head, stream: Readable.from(head.length ? [head] : []) };
  body.unshift(head);
  return { head, stream: body };
}

export class FsSourceArchives implements SourceArchives {
  constructor(
    private readonly root: string,
    private readonly limits: SourceArchiveLimits,
  ) {}

  dir(buildId: string): string {
    return path.join(this.root, buildId, 'source');
  }

  async has(buildId: string): Promise<boolean> {
    return stat(this.dir(buildId)).then(
      () => true,
      () => false,
    );
  }

  async remove(buildId: string): Promise<void> {
    await rm(path.join(this.root, buildId), { recursive: true, force: true });
  }

  async stale(before: Date): Promise<string[]> {
    const names = await readdir(this.root).catch(() => [] as string[]);
    const out: string[] = [];
    for (const name of names) {
      const st = await stat(path.join(this.root, name)).catch(() => undefined);
      if (st && st.mtime < before) out.push(name);
    }
    return out;
  }

  async receive(buildId: string, body: Readable): Promise<void> {
    const dir = this.dir(buildId);
    await mkdir(dir, { recursive: true });
    const root = await realpath(dir);
    const extract = tar.extract();
    let bytes = 0;
    let entries = 0;
    let files = 0;
    const links: { at: string; target: string; name: string }[] = [];

    extract.on('entry', (header, stream, next) => {
      // A refused entry destroys the extraction, and with it this stream: that error is ours already.
      stream.on('error', () => undefined);
      const done = (err?: unknown) => {
        if (err) {
          stream.resume();
          next(err as Error);
        } else next();
      };
      const budget: Budget = {
        entry: () => {
          if (++entries > this.limits.entries) throw refused(`more than ${this.limits.entries} entries`);
        },
        write: (n) => {
          bytes += n;
          if (bytes > this.limits.unpackedBytes)
            throw new PayloadTooLargeError(`archive: unpacks to more than the limit of ${this.limits.unpackedBytes} bytes`);
        },
      };
      this.unpackEntry(root, header, stream, links, budget)
        .then((kind) => {
          if (kind === 'file') files++;
          done();
        })
        .catch(done);
    });

    let gzip = false;
    try {
      // gzip'd or not, whatever the Content-Type says: its first two bytes tell.
      const source = await peek(body, 2);
      gzip = source.head[0] === 0x1f && source.head[1] === 0x8b;
      if (gzip) await pipeline(source.stream, createGunzip(), extract);
      else await pipeline(source.stream, extract);
    } catch (err) {
      if (err instanceof PierError) throw err;
      const message = (err as Error).message ?? String(err);
      throw refused(`not a valid ${gzip ? 'gzip-compressed tar' : 'tar'} archive (${message})`);
    }
    if (files === 0) throw refused('holds no file');
    // Links are checked once every entry is on disk, following chains of links for real.
    for (const l of links) {
      const resolved = await realpath(l.at).catch(() => undefined);
      if (resolved !== undefined ? !within(root, resolved) : !within(root, path.resolve(path.dirname(l.at), l.target))) {
        throw refused(`${l.name}: a link pointing outside the archive (${l.target})`);
      }
    }
  }

  /** Writes one entry below `root`; returns what it was. */
  private async unpackEntry(
    root: string,
    header: tar.Header,
    stream: tar.ExtractEvents['entry'][1],
    links: { at: string; target: string; name: string }[],
    budget: Budget,
  ): Promise<'file' | 'dir' | 'link'> {
    const rel = entryPath(header.name);
    budget.entry();
    budget.write(header.size ?? 0);
    if (rel === '' || rel === '.') {
      stream.resume();
      return 'dir';
    }
    const at = path.join(root, ...rel.split('/'));
    const parent = path.dirname(at);
    await mkdir(parent, { recursive: true });
    // The parent as it is on disk (an earlier entry may have made part of it a link).
    if (!within(root, await realpath(parent))) throw refused(`${header.name}: would be written through a link pointing outside the archive`);
    const existing = await lstat(at).catch(() => undefined);
    if (existing?.isSymbolicLink()) throw refused(`${header.name}: would be written through a link`);
    const mode = (header.mode ?? 0o644) & 0o777;
    switch (header.type) {
      case 'directory':
        stream.resume();
        await mkdir(at, { recursive: true, mode: mode | 0o700 });
        return 'dir';
      case 'file':
      case 'contiguous-file':
        await pipeline(stream as unknown as Readable, createWriteStream(at, { mode: mode | 0o600 }));
        return 'file';
      case 'symlink': {
        stream.resume();
        const target = header.linkname ?? '';
        if (!target || path.isAbsolute(target) || !within(root, path.resolve(parent, target))) {
          throw refused(`${header.name}: a link pointing outside the archive (${target})`);
        }
        await symlink(target, at);
        links.push({ at, target, name: header.name });
        return 'link';
      }
      case 'link': {
        // A hard link names another entry of the archive: it becomes a copy of that file.
        stream.resume();
        const from = path.join(root, ...entryPath(header.linkname ?? '').split('/'));
        const real = await realpath(from).catch(() => undefined);
        const target = real && within(root, real) ? await stat(real) : undefined;
        if (!target?.isFile()) throw refused(`${header.name}: a hard link to ${header.linkname}, which is not a file of the archive`);
        // The copy is written in full: it counts as much as its file.
        budget.write(target.size);
        await copyFile(real!, at);
        return 'file';
      }
      case 'character-device':
      case 'block-device':
      case 'fifo':
        throw refused(`${header.name}: devices and FIFOs are not allowed`);
      default:
        throw refused(`${header.name}: entries of type ${header.type} are not allowed`);
    }
  }
}
