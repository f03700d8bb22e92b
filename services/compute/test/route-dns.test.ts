// The edge's route DNS (src/edge/route-dns.ts) asked by a real resolver (Node's c-ares), as
// Caddy's asks it: SRV records for a known host, an address for a target, NXDOMAIN for
// another name, nothing for other types.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Resolver } from 'node:dns/promises';
import { createLogger } from '@pier/kit';
import { RouteDns, type RouteName } from '../src/edge/route-dns.ts';

const table = new Map<string, RouteName>([
  [
    'web-1.apps.test',
    {
      srv: [
        { target: 'pier-web-0.pier-vpc-1', port: 8080 },
        { target: 'pier-web-1.pier-vpc-1', port: 8080 },
      ],
    },
  ],
  ['pier-web-0.pier-vpc-1', { ipv4: '172.18.0.5' }],
  ['many.apps.test', { srv: Array.from({ length: 100 }, (_, i) => ({ target: `pier-many-replica-${i}.pier-vpc-0123456789abcdef`, port: 9000 + i })) }],
]);
const asked: string[] = [];
let server: RouteDns;
let resolver: Resolver;

beforeAll(async () => {
  server = new RouteDns({
    lookup: (name) => {
      asked.push(name);
      if (name === 'broken.apps.test') throw new Error('no listing');
      return table.get(name) ?? null;
    },
    logger: createLogger('route-dns-test', 'silent'),
  });
  const port = await server.listen('127.0.0.1');
  resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
});
afterAll(() => server.close());

describe('route DNS', () => {
  it('answers a known host with its SRV records, case-insensitively', async () => {
    const records = await resolver.resolveSrv('Web-1.Apps.Test');
    expect(records.map((r) => [r.name, r.port])).toEqual([
      ['pier-web-0.pier-vpc-1', 8080],
      ['pier-web-1.pier-vpc-1', 8080],
    ]);
    expect(asked).toContain('web-1.apps.test');
  });

  it('answers a target with its address', async () => {
    expect(await resolver.resolve4('pier-web-0.pier-vpc-1')).toEqual(['172.18.0.5']);
  });

  it('says NXDOMAIN for a name it does not know, and no record for other types of one it knows', async () => {
    await expect(resolver.resolveSrv('nothing.apps.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolve4('web-1.apps.test')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolve6('pier-web-0.pier-vpc-1')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolveSrv('pier-web-0.pier-vpc-1')).rejects.toMatchObject({ code: 'ENODATA' });
  });

  it('fails a question it cannot answer (SERVFAIL), rather than let the resolver wait', async () => {
    await expect(resolver.resolveSrv('broken.apps.test')).rejects.toMatchObject({ code: 'ESERVFAIL' });
  });

  it('keeps an answer within 1,232 bytes, dropping the records that do not fit', async () => {
    const records = await resolver.resolveSrv('many.apps.test');
    expect(records.length).toBeGreaterThan(5);
    expect(records.length).toBeLessThan(100);
    expect(records[0]).toMatchObject({ name: 'pier-many-replica-0.pier-vpc-0123456789abcdef', port: 9000 });
  });
});
