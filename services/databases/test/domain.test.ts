import { describe, expect, it } from 'vitest';
import { resolveProvision, resolveUpdate } from '../src/domain/rules.ts';
import { normaliseCidr } from '../src/domain/cidr.ts';
import { renderPgHba, renderMysqlAccess, mysqlHostOf, type AccessPolicy } from '../src/domain/access.ts';
import { resync } from '../src/domain/status.ts';
import { connectionJson } from '../src/http/shapes.ts';
import { externalEndpoint } from '../src/domain/connection.ts';
import type { ClusterCapabilities } from '../src/domain/capabilities.ts';
import type { DatabaseRecord } from '../src/domain/database.ts';
import { fieldOf } from './support.ts';

const caps: ClusterCapabilities = {
  adapter: 'docker',
  engines: {
    postgresql: { versions: ['15'], defaultVersion: '15', server: 'PostgreSQL', replicas: { min: 0, max: 2, default: 0, shrinks: true } },
    mysql: { versions: ['10.11'], defaultVersion: '10.11', server: 'MariaDB', replicas: { min: 1, max: 5, default: 1, shrinks: true } },
  },
  enforcesStorage: false,
};

describe('provision rules', () => {
  it('applies the defaults per engine', () => {
    expect(resolveProvision({ name: 'a' }, caps)).toEqual({
      name: 'a',
      engine: 'postgresql',
      instanceType: 'svc.nano',
      storageGb: 10,
      version: '15',
      replicas: 0,
      externalAccessEnabled: false,
    });
    expect(resolveProvision({ name: 'b', engine: 'mysql' }, caps)).toMatchObject({ instanceType: 'svc.small', version: '10.11', replicas: 1 });
  });

  it('names the field of every violation', () => {
    expect(fieldOf(() => resolveProvision({}, caps))).toBe('name');
    expect(fieldOf(() => resolveProvision({ name: 'x'.repeat(20) }, caps))).toBe('name');
    expect(fieldOf(() => resolveProvision({ name: 'Bad_Name' }, caps))).toBe('name');
    // The platform's own prefixes: a database named `db-<x>-rw` could stand for another's host.
    expect(fieldOf(() => resolveProvision({ name: 'db-orders-rw' }, caps))).toBe('name');
    expect(fieldOf(() => resolveProvision({ name: 'pier-svc-x' }, caps))).toBe('name');
    expect(fieldOf(() => resolveProvision({ name: 'a', engine: 'mysql', instance_type: 'svc.nano' }, caps))).toBe('instance_type');
    expect(fieldOf(() => resolveProvision({ name: 'a', engine: 'mysql', replicas: 2 }, caps))).toBe('replicas');
    expect(fieldOf(() => resolveProvision({ name: 'a', engine: 'mysql', replicas: 7 }, caps))).toBe('replicas');
    expect(fieldOf(() => resolveProvision({ name: 'a', replicas: 3 }, caps))).toBe('replicas');
    expect(fieldOf(() => resolveProvision({ name: 'a', storage_gb: 0 }, caps))).toBe('storage_gb');
    expect(fieldOf(() => resolveProvision({ name: 'a', storage_gb: 1025 }, caps))).toBe('storage_gb');
    expect(fieldOf(() => resolveProvision({ name: 'a', postgres_version: '16' }, caps))).toBe('postgres_version');
    expect(fieldOf(() => resolveProvision({ name: 'a', mysql_version: '8.0' }, caps))).toBe('mysql_version');
    expect(fieldOf(() => resolveProvision({ name: 'a', engine: 'mysql', mysql_version: '8.0' }, caps))).toBe('mysql_version');
    expect(resolveProvision({ name: 'x'.repeat(19), engine: 'mysql', replicas: 3 }, caps).replicas).toBe(3);
  });

  it('lets storage only grow and keeps mysql off svc.nano on update', () => {
    const db = { engine: 'mysql', instanceType: 'svc.small', storageGb: 20, name: 'a', externalAccessEnabled: false, status: 'running' } as DatabaseRecord;
    expect(fieldOf(() => resolveUpdate(db, { storage_gb: 10 }))).toBe('storage_gb');
    expect(fieldOf(() => resolveUpdate(db, { instance_type: 'svc.nano' }))).toBe('instance_type');
    expect(resolveUpdate(db, { storage_gb: 30, name: 'b' })).toMatchObject({ storageGb: 30, name: 'b', instanceType: 'svc.small' });
    expect(fieldOf(() => resolveUpdate(db, { name: 'db-a' }))).toBe('name');
    // A database named before the reserved prefixes may repeat its own name.
    expect(resolveUpdate({ ...db, name: 'db-old' }, { name: 'db-old', storage_gb: 30 })).toMatchObject({ name: 'db-old' });
  });
});

describe('CIDR blocks', () => {
  it('normalises IPv4 and IPv6 and rejects the rest', () => {
    expect(normaliseCidr('10.1.2.3/8')).toBe('10.0.0.0/8');
    expect(normaliseCidr('203.0.113.7')).toBe('203.0.113.7/32');
    expect(normaliseCidr('2001:0DB8::1/32')).toBe('2001:db8::/32');
    expect(normaliseCidr('::ffff:1.2.3.4/128')).toBe('::ffff:102:304/128');
    for (const bad of ['1.2.3.4/33', 'example.com', '1.2.3/24', '::/129', '']) {
      expect(fieldOf(() => normaliseCidr(bad))).toBe('cidr');
    }
  });
});

describe('access rendering', () => {
  const policy = (over: Partial<AccessPolicy>): AccessPolicy => ({
    engine: 'postgresql',
    database: 'abcd1234',
    appUser: 'app_abcd1234',
    vpcNetworks: ['172.18.0.0/16'],
    controlPlane: ['172.18.0.1/32'],
    hostAddresses: ['172.18.0.1/32'],
    externalAccess: false,
    rules: [],
    ...over,
  });

  it('admits the VPC always, the world only with external access, and only listed blocks once a rule exists', () => {
    const closed = renderPgHba(policy({}));
    expect(closed).toContain('host all all 172.18.0.1/32 reject');
    expect(closed).toContain('host all all 172.18.0.0/16 scram-sha-256');
    expect(closed).not.toContain('0.0.0.0/0');
    const open = renderPgHba(policy({ externalAccess: true }));
    expect(open).toContain('host all all 172.18.0.1/32 scram-sha-256');
    expect(open).toContain('host all all 0.0.0.0/0 scram-sha-256');
    const listed = renderPgHba(policy({ externalAccess: true, rules: ['192.0.2.0/24'] }));
    expect(listed).toContain('host all all 172.18.0.1/32 reject');
    expect(listed).toContain('host all all 192.0.2.0/24 scram-sha-256');
    expect(listed).not.toContain('0.0.0.0/0');
    // The console role logs in from the control plane only.
    expect(listed.indexOf('host all pier_console 172.18.0.1/32')).toBeLessThan(listed.indexOf('host all pier_console all reject'));
  });

  it("admits the app user at the host address whenever external access is on when Pier's listener is the way in (it judged the allowlist)", () => {
    const listed = renderPgHba(policy({ externalAccess: true, rules: ['192.0.2.0/24'], externalListener: true }));
    expect(listed).toContain('host all all 172.18.0.1/32 scram-sha-256');
    const closed = renderPgHba(policy({ externalAccess: false, externalListener: true }));
    expect(closed).toContain('host all all 172.18.0.1/32 reject');
  });

  it('maps rules to MySQL account hosts and locks the host address when it is not admitted', () => {
    const sql = renderMysqlAccess(policy({ engine: 'mysql', externalAccess: true, rules: ['192.0.2.0/24'] }), { app: 'p', console: 'c', replication: 'r' });
    expect(sql).toContain("CREATE USER 'app_abcd1234'@'172.18.0.1' IDENTIFIED BY 'p' ACCOUNT LOCK;");
    expect(sql).toContain("'app_abcd1234'@'192.0.2.0/255.255.255.0'");
    // The SQL console's way in: the server's own loopback (docker exec), never a network.
    expect(sql).toContain("CREATE USER 'app_abcd1234'@'127.0.0.1' IDENTIFIED BY 'p';");
    // A rule covering the host address admits it; a rule equal to the VPC network is one account.
    const wide = renderMysqlAccess(policy({ engine: 'mysql', externalAccess: true, rules: ['172.18.0.0/16'] }), { app: 'p', console: 'c', replication: 'r' });
    expect(wide).toContain("CREATE USER 'app_abcd1234'@'172.18.0.1' IDENTIFIED BY 'p';");
    expect(wide.match(/CREATE USER 'app_abcd1234'@'172.18.0.0\/255.255.0.0'/g)).toHaveLength(1);
    expect(sql.split('\n').every((l) => l === '' || l.endsWith(';'))).toBe(true);
    expect(mysqlHostOf('2001:db8::1/128')).toBe('2001:db8::1');
    expect(fieldOf(() => mysqlHostOf('2001:db8::/32'))).toBe('cidr');
  });
});

describe('status resync', () => {
  const db = (status: DatabaseRecord['status'], createdAgoMs = 0) =>
    ({ status, statusReason: null, createdAt: new Date(Date.now() - createdAgoMs) }) as DatabaseRecord;
  it('follows the cluster', () => {
    expect(resync(db('creating'), { phase: 'ready' }, new Date(), 60_000)).toEqual({ status: 'running', reason: null });
    expect(resync(db('creating'), { phase: 'starting' }, new Date(), 60_000)).toBeNull();
    expect(resync(db('creating', 120_000), { phase: 'starting' }, new Date(), 60_000)?.status).toBe('error');
    expect(resync(db('running'), { phase: 'failed', reason: 'x' }, new Date(), 60_000)).toEqual({ status: 'error', reason: 'x' });
    expect(resync(db('running'), { phase: 'absent' }, new Date(), 60_000)?.status).toBe('error');
    expect(resync(db('error'), { phase: 'ready' }, new Date(), 60_000)?.status).toBe('running');
    expect(resync(db('deleting'), { phase: 'ready' }, new Date(), 60_000)).toBeNull();
    expect(resync(db('deleting'), { phase: 'absent' }, new Date(), 60_000)?.status).toBe('deleted');
  });
});

describe('connection details', () => {
  const endpoints = { host: 'db-abcd1234-rw', port: 5432, readOnlyHost: 'db-abcd1234-ro', poolerHost: 'p', poolerHostRo: 'pr', externalPort: 5432 };
  const details = (engine: 'postgresql' | 'mysql', external: ReturnType<typeof externalEndpoint>) => ({
    engine,
    shortId: 'abcd1234',
    endpoints,
    credentials: { username: 'app_abcd1234', password: 's3cret' },
    external,
  });

  it('gives the external URLs in the spec shape with a domain, only with external access on', () => {
    const on = connectionJson(details('postgresql', externalEndpoint('abcd1234', true, endpoints, 'pg.example.com')));
    expect(on.external_url).toBe('postgresql://app_abcd1234:s3cret@abcd1234.pg.example.com:5432/abcd1234');
    expect(on.external_url_ro).toBe('postgresql://app_abcd1234:s3cret@abcd1234-ro.pg.example.com:5432/abcd1234');
    expect(on.database_url).toBe('postgresql://app_abcd1234:s3cret@db-abcd1234-rw:5432/abcd1234');
    expect(on.pooler_host).toBe('p');
    const off = connectionJson(details('postgresql', externalEndpoint('abcd1234', false, endpoints, 'pg.example.com')));
    expect(off.external_host).toBeNull();
    expect(off.external_url).toBeNull();
    const my = connectionJson(details('mysql', externalEndpoint('abcd1234', true, { ...endpoints, port: 3306, externalPort: 3306 }, 'my.example.com')));
    expect(my.external_url).toBe('mysql://app_abcd1234:s3cret@abcd1234.my.example.com:3306/abcd1234');
    expect(my).not.toHaveProperty('pooler_host');
  });

  it('falls back to the address the cluster reports when no domain is configured', () => {
    const published = { ...endpoints, externalPort: 49153, externalAddress: '127.0.0.1' };
    expect(externalEndpoint('abcd1234', true, published, undefined)).toEqual({ host: '127.0.0.1', hostRo: '127.0.0.1', port: 49153, portRo: 49153 });
    // A replica with a published port of its own takes the reads.
    const withReplica = connectionJson(details('postgresql', externalEndpoint('abcd1234', true, { ...published, externalPortRo: 49154 }, undefined)));
    expect(withReplica).toMatchObject({ external_port: 49153, external_port_ro: 49154 });
    expect(withReplica.external_url_ro).toBe('postgresql://app_abcd1234:s3cret@127.0.0.1:49154/abcd1234');
    // A load balancer without an address yet: no external details rather than a host that does not answer.
    expect(externalEndpoint('abcd1234', true, endpoints, undefined)).toBeNull();
  });
});
