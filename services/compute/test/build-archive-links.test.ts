// Links in build sources, on the real Docker engine: an uploaded archive's hard links count
// what they write against the unpacked limit (a few KiB of links to one big file would
// otherwise fill the disk), links leaving the archive are refused however they are chained,
// and the context packed for the builder never reads through a link out of the source.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packContext } from '../src/cluster/build-context.ts';
import { startCompute, until, cleanDocker, type Compute } from './support.ts';
import { archive, removeBuiltImages, served, site, upload, waitForBuild } from './build-support.ts';

/** The smallest upload limit compute takes; archives may unpack to five times it (320 KiB). */
const UPLOAD_LIMIT = 64 * 1024;
const UNPACKED_LIMIT = UPLOAD_LIMIT * 5;

let c: Compute;
let work: string;
const services: string[] = [];

async function newService(name: string): Promise<string> {
  const res = await c.request('POST', c.base, { name, port: 8080, health_check_path: '/healthz' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  services.push(res.body.id);
  return res.body.id;
}

/** The sources kept for builds, by build id. */
const uploads = () => readdir(path.join(work, 'uploads')).catch(() => [] as string[]);

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'pier-build-links-'));
  c = await startCompute({ PIER_BUILD_WORK_DIR: work, PIER_BUILD_UPLOAD_LIMIT_BYTES: String(UPLOAD_LIMIT), PIER_BUILD_INTERVAL_MS: '300' });
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
  await removeBuiltImages(...services);
  await rm(work, { recursive: true, force: true });
}, 60_000);

describe('hard links in an uploaded archive', () => {
  it('counts each link as the size of its target: one file and many links over the limit is a 413, nothing kept', async () => {
    const svc = await newService('link-bomb');
    const kept = await uploads();
    // 256 KiB once, then 200 links to it: 51 MiB on disk if each link were free.
    const body = await archive([
      { name: 'Dockerfile', content: 'FROM pier/tiny-http:1\n' },
      { name: 'big', content: 'x'.repeat(256 * 1024) },
      ...Array.from({ length: 200 }, (_, i) => ({ name: `l${i}`, type: 'link' as const, linkname: 'big' })),
    ]);
    expect(body.length).toBeLessThan(UPLOAD_LIMIT);
    const res = await upload(c, svc, body);
    expect(res.status, JSON.stringify(res.body)).toBe(413);
    expect(res.body).toMatchObject({ code: 'payload_too_large' });
    expect(res.body.error).toContain(`more than the limit of ${UNPACKED_LIMIT} bytes`);
    expect((await c.get(`${c.base}/${svc}/builds`)).body.items).toEqual([]);
    expect(await uploads()).toEqual(kept);
  });

  it('still takes hard links within the limit: the link is a copy of its file in the build', async () => {
    const svc = await newService('linked');
    const marker = `linked-${randomUUID()}`;
    const body = await archive([
      { name: 'Dockerfile', content: 'FROM pier/tiny-http:1\nCOPY copy.html /www/index.html\n' },
      { name: 'index.html', content: site(marker)['index.html'] },
      { name: 'copy.html', type: 'link', linkname: 'index.html' },
    ]);
    const res = await upload(c, svc, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b.status, b.error).toBe('succeeded');
    await until(
      () => c.get(`${c.base}/${svc}`).then((r) => r.body.status),
      (s) => s === 'running',
      60_000,
    );
    expect(await served(c.vpcId, svc, b.deployment_id)).toContain(marker);
  }, 120_000);
});

describe('symbolic links', () => {
  it('refuses an archive whose links leave its root, chained or written through, with nothing queued', async () => {
    const svc = await newService('symlinks');
    const kept = await uploads();
    const cases: [string, Buffer, RegExp][] = [
      // `m` reads as inside (`l/..` is `.` on paper) but `l` is the root itself, so it is the root's parent.
      [
        'a chain',
        await archive([
          { name: 'Dockerfile', content: 'FROM x' },
          { name: 'l', type: 'symlink', linkname: '.' },
          { name: 'm', type: 'symlink', linkname: 'l/..' },
        ]),
        /m: a link pointing outside the archive \(l\/\.\.\)/,
      ],
      [
        'written through a chain',
        await archive([
          { name: 'l', type: 'symlink', linkname: '.' },
          { name: 'm', type: 'symlink', linkname: 'l/..' },
          { name: 'm/escaped', content: 'x' },
        ]),
        /m\/escaped: would be written through a link pointing outside the archive/,
      ],
      [
        'a hard link through a link',
        await archive([
          { name: 'l', type: 'symlink', linkname: '.' },
          { name: 'm', type: 'symlink', linkname: 'l/..' },
          { name: 'h', type: 'link', linkname: 'm/etc/passwd' },
        ]),
        /h: a hard link to m\/etc\/passwd, which is not a file of the archive/,
      ],
      ['absolute', await archive([{ name: 'Dockerfile', type: 'symlink', linkname: '/etc/passwd' }]), /a link pointing outside the archive \(\/etc\/passwd\)/],
    ];
    for (const [what, body, why] of cases) {
      const res = await upload(c, svc, body);
      expect(res.status, what).toBe(400);
      expect(res.body, what).toMatchObject({ code: 'invalid_archive', field: 'archive' });
      expect(res.body.error, what).toMatch(why);
    }
    expect((await c.get(`${c.base}/${svc}/builds`)).body.items).toEqual([]);
    expect(await uploads()).toEqual(kept);
  });

  // A git source may hold any link (git stores them as they are): what compute reads of it must stay inside.
  describe('in a source packed for the builder', () => {
    let root: string;
    let source: string;

    beforeAll(async () => {
      root = await mkdtemp(path.join(tmpdir(), 'pier-context-'));
      source = path.join(root, 'source');
      await mkdir(source);
      await writeFile(path.join(root, 'outside.txt'), 'outside the source\n');
      await writeFile(path.join(root, 'outside-ignore'), '*\n');
      await writeFile(path.join(source, 'Dockerfile'), 'FROM pier/tiny-http:1\n');
      await symlink('/etc/passwd', path.join(source, 'passwd'));
      await symlink('../outside.txt', path.join(source, 'up'));
    });
    afterAll(() => rm(root, { recursive: true, force: true }));

    async function entries(dir: string): Promise<Map<string, { type: string; linkname?: string | null; body: string }>> {
      const ctx = await packContext(dir, '.', 'Dockerfile');
      const out = new Map<string, { type: string; linkname?: string | null; body: string }>();
      const extract = tar.extract();
      extract.on('entry', (header, stream, next) => {
        let body = '';
        stream.on('data', (d: unknown) => (body += (d as Buffer).toString()));
        stream.on('end', () => {
          out.set(header.name, { type: header.type ?? 'file', linkname: header.linkname, body });
          next();
        });
      });
      await new Promise<void>((resolve, reject) => {
        extract.on('finish', resolve);
        extract.on('error', reject);
        ctx.tar.on('error', reject).pipe(extract as unknown as NodeJS.WritableStream);
      });
      return out;
    }

    it('keeps links as links: nothing outside the source is read into the context', async () => {
      const packed = await entries(source);
      expect(packed.get('passwd')).toEqual({ type: 'symlink', linkname: '/etc/passwd', body: '' });
      expect(packed.get('up')).toEqual({ type: 'symlink', linkname: '../outside.txt', body: '' });
      expect([...packed.values()].map((e) => e.body).join('')).not.toContain('outside the source');
      expect([...packed.values()].map((e) => e.body).join('')).not.toContain('root:');
    });

    it('fails a build whose .dockerignore is a link out of the source, rather than read it', async () => {
      await symlink('../outside-ignore', path.join(source, '.dockerignore'));
      try {
        await expect(entries(source)).rejects.toThrow(/\.dockerignore: \.dockerignore leads outside the source/);
      } finally {
        await rm(path.join(source, '.dockerignore'));
      }
    });
  });
});
