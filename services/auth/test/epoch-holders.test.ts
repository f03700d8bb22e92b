import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { connect, JSONCodec, type KV, type NatsConnection } from 'nats';
import { AUTH_CACHE_HOLDERS_BUCKET, AUTH_CACHE_REGISTRATION_TTL_MS, epochAckSubject, epochSubject, holderKey, type EpochTick } from '@pier/kit';
import { startAuth, type AuthHarness, type RequestAs } from './harness.ts';

// Which cache holders a change of answers waits for (kit's auth-epoch.ts): every gateway
// registered in the holders bucket, and no other. Auth runs with a 10-second lease, so a
// change that counted a holder which will never acknowledge would answer only after it;
// with the holders read right, it answers once the live one has acknowledged. Real auth,
// Postgres and NATS; the holders are this test's own NATS clients, as gateways would be.

const LEASE_MS = 10_000;
const json = JSONCodec<unknown>();

let h: AuthHarness;
let admin: pg.Client;
let owner: RequestAs;
let nc: NatsConnection;
let kv: KV;
let installation: string;
let ws: string;
let member: string;

/** A holder that registers and acknowledges every epoch it sees, `delayMs` after the tick; returns when it acknowledged what. */
function liveHolder(name: string, delayMs: number): { acks: { epoch: number; at: number }[]; stop: () => void } {
  const acks: { epoch: number; at: number }[] = [];
  let seen = -1;
  const sub = nc.subscribe(epochSubject(installation), {
    callback: (_err, m) => {
      const tick = json.decode(m.data) as EpochTick;
      if (tick.epoch <= seen) return;
      seen = tick.epoch;
      setTimeout(() => {
        acks.push({ epoch: tick.epoch, at: Date.now() });
        nc.publish(epochAckSubject(installation), json.encode({ holder: name, epoch: tick.epoch }));
      }, delayMs);
    },
  });
  const register = () => void kv.put(holderKey(installation, name), json.encode({ at: Date.now() })).catch(() => undefined);
  register();
  const renew = setInterval(register, AUTH_CACHE_REGISTRATION_TTL_MS / 5);
  return { acks, stop: () => (clearInterval(renew), sub.unsubscribe()) };
}

beforeAll(async () => {
  h = await startAuth({ PIER_AUTH_CACHE_LEASE_MS: String(LEASE_MS), PIER_AUTH_CACHE_CLOCK_SKEW_MS: '0' });
  ws = h.running.bootstrap!.workspaceId;
  owner = await h.as({ subject: h.running.bootstrap!.userId, workspaceId: ws, role: 'owner' });
  admin = new pg.Client({ connectionString: h.db.adminUrl });
  await admin.connect();
  installation = (await admin.query(`select installation from auth.auth_epoch where id = 1`)).rows[0].installation;
  nc = await connect({ servers: h.natsUrl });
  kv = await nc.jetstream().views.kv(AUTH_CACHE_HOLDERS_BUCKET, { ttl: AUTH_CACHE_REGISTRATION_TTL_MS, history: 1 });
  member = (await owner.post(`/api/v1/workspaces/${ws}/members`).send({ email: 'holders@example.com', role: 'developer' }).expect(201)).body.user_id;
});

afterAll(async () => {
  await nc?.close();
  await admin?.end();
  await h?.stop();
});

describe('a change of answers', () => {
  it("waits for the registered holder's acknowledgement, and not for a holder that deregistered or another installation's", async () => {
    // A gateway that stopped (its key deleted) and one of another installation never acknowledge.
    await kv.put(holderKey(installation, 'gone'), json.encode({ at: Date.now() }));
    await kv.delete(holderKey(installation, 'gone'));
    await kv.put(holderKey('another-installation', 'elsewhere'), json.encode({ at: Date.now() }));
    const live = liveHolder('live', 300);
    try {
      for (const role of ['viewer', 'developer', 'admin']) {
        const res = await owner
          .patch(`/api/v1/workspaces/${ws}/members/${member}`)
          .send({ role })
          .timeout(LEASE_MS / 2);
        const answered = Date.now();
        expect(res.status).toBe(200);
        const epoch = Number((await admin.query(`select epoch from auth.auth_epoch where id = 1`)).rows[0].epoch);
        // Answered after the live holder acknowledged this very epoch, and well before the lease.
        const ack = live.acks.find((a) => a.epoch === epoch);
        expect(ack, `no acknowledgement of epoch ${epoch} before the answer`).toBeDefined();
        expect(ack!.at).toBeLessThanOrEqual(answered);
      }
    } finally {
      live.stop();
    }
  });

  it('waits out the lease for a registered holder that never acknowledges', async () => {
    await kv.put(holderKey(installation, 'silent'), json.encode({ at: Date.now() }));
    const started = Date.now();
    const res = await owner
      .patch(`/api/v1/workspaces/${ws}/members/${member}`)
      .send({ role: 'viewer' })
      .timeout(LEASE_MS * 3);
    expect(res.status).toBe(200);
    // The revocation has no grace: a cache that did not acknowledge has lost its lease by now.
    expect(Date.now() - started).toBeGreaterThanOrEqual(LEASE_MS);
    await kv.delete(holderKey(installation, 'silent'));
  }, 40_000);
});
