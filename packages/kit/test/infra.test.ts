// Proves the shared test infrastructure (test/global-setup.ts) is real: a PostgreSQL we
// can query as superuser and a NATS with JetStream. Lives under packages/kit so `pg`
// and `nats` (kit dependencies) resolve.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { connect, type NatsConnection } from 'nats';

describe('test infrastructure', () => {
  describe('postgres', () => {
    const client = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    beforeAll(() => client.connect());
    afterAll(() => client.end());

    it('answers queries as a superuser on PostgreSQL 15', async () => {
      const one = await client.query<{ one: number }>('select 1 as one');
      expect(one.rows).toEqual([{ one: 1 }]);
      const who = await client.query<{ db: string; su: string; v: string }>(
        "select current_database() as db, current_setting('is_superuser') as su, current_setting('server_version_num') as v",
      );
      expect(who.rows[0]?.db).toBe('postgres');
      expect(who.rows[0]?.su).toBe('on');
      expect(Number(who.rows[0]?.v)).toBeGreaterThanOrEqual(150000);
    });

    it('can create and drop a database (what per-test isolation needs)', async () => {
      const name = `infra_${randomUUID().replaceAll('-', '')}`;
      await client.query(`create database ${name}`);
      const found = await client.query('select 1 from pg_database where datname = $1', [name]);
      expect(found.rowCount).toBe(1);
      await client.query(`drop database ${name}`);
    });
  });

  describe('nats', () => {
    let nc: NatsConnection;
    beforeAll(async () => {
      nc = await connect({ servers: inject('natsUrl') });
    });
    afterAll(() => nc.drain());

    it('adds, publishes to and deletes a JetStream stream', async () => {
      const jsm = await nc.jetstreamManager();
      const name = `INFRA_${randomUUID().slice(0, 8).toUpperCase()}`;
      const subject = `infra.${name}`;
      const info = await jsm.streams.add({ name, subjects: [subject] });
      expect(info.config.name).toBe(name);

      const ack = await nc.jetstream().publish(subject, new TextEncoder().encode('hello'));
      expect(ack.stream).toBe(name);
      expect(ack.seq).toBe(1);
      expect((await jsm.streams.info(name)).state.messages).toBe(1);

      expect(await jsm.streams.delete(name)).toBe(true);
      const names: string[] = [];
      for await (const n of jsm.streams.names()) names.push(n);
      expect(names).not.toContain(name);
    });
  });
});
