// 0011_domain_claims on a database holding domains: those verified before it keep their
// hostname, the others become claims with seven days to go, and its down leaves one row per
// hostname (the verified one, else the oldest claim) so the old unique constraint fits again.
import { describe, it, expect, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createDb, migrate } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { migrations, SCHEMA } from '../src/store/migrations.ts';
import { type TestDatabase } from './support.ts';

let db: TestDatabase | undefined;
afterAll(async () => db?.drop());

const DAY_MS = 86_400_000;

describe('0011_domain_claims', () => {
  it('keeps verified domains holding their hostname, gives pending ones a lifetime, and goes back down', async () => {
    db = await createTestDatabase(infra().postgresAdminUrl);
    const knex = createDb(db.urls.compute, SCHEMA);
    try {
      // Run against the schema as it stood just before it (later migrations come after).
      const at = migrations.findIndex((m) => m.name === '0011_domain_claims');
      const claims = migrations[at]!;
      expect(claims.name).toBe('0011_domain_claims');
      await migrate(knex, SCHEMA, migrations.slice(0, at), 'up');
      const service = async (name: string) => {
        const [s] = await knex('services')
          .insert({
            workspace_id: randomUUID(),
            vpc_id: randomUUID(),
            name,
            service_type: 'web',
            instance_type: 'svc.nano',
            deployment_mode: 'always_on',
            min_replicas: 1,
            run_as_user: 1000,
            status: 'running',
          })
          .returning('*');
        return s;
      };
      const domain = (s: any, hostname: string, more: Record<string, unknown> = {}) =>
        knex('domains')
          .insert({ workspace_id: s.workspace_id, vpc_id: s.vpc_id, service_id: s.id, hostname, verification_token: randomUUID(), ...more })
          .returning('*')
          .then(([d]) => d);
      const [a, b] = [await service('a'), await service('b')];
      const active = await domain(a, 'shop.example.com', { status: 'active', routed: true, tls_status: 'issued', last_checked_at: new Date('2026-01-02') });
      const pending = await domain(a, 'www.example.com');

      await migrate(knex, SCHEMA, migrations, 'up');
      const after = async (id: string) => knex('domains').where({ id }).first();
      expect((await after(active.id)).verified_at).toEqual(new Date('2026-01-02'));
      expect((await after(active.id)).claim_expires_at).toBeNull();
      expect((await after(pending.id)).verified_at).toBeNull();
      expect(Math.abs((await after(pending.id)).claim_expires_at.getTime() - Date.now() - 7 * DAY_MS)).toBeLessThan(60_000);
      // Claims coexist; a second verified row for one hostname, or one hostname twice on one service, does not.
      const rival = await domain(b, 'www.example.com', { claim_expires_at: new Date(Date.now() + DAY_MS) });
      await expect(domain(b, 'shop.example.com', { verified_at: new Date() })).rejects.toThrow(/domains_verified_hostname/);
      await expect(domain(a, 'www.example.com', { claim_expires_at: new Date() })).rejects.toThrow(/domains_service_hostname/);
      // Neither verified nor lapsing: refused.
      await expect(domain(b, 'api.example.com')).rejects.toThrow(/domains_claim_expires/);

      await claims.down(knex);
      const left = await knex('domains').orderBy('hostname').select('id', 'hostname');
      expect(left).toEqual([
        { id: active.id, hostname: 'shop.example.com' },
        { id: pending.id, hostname: 'www.example.com' },
      ]);
      expect(left.map((d) => d.id)).not.toContain(rival.id);
      await expect(domain(b, 'shop.example.com')).rejects.toThrow(/domains_hostname_unique/);
      await claims.up(knex);
      expect((await after(active.id)).verified_at).not.toBeNull();
    } finally {
      await knex.destroy();
    }
  });
});
