import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import request from 'supertest';
import { IDENTITY_HEADER, PierError } from '@pier/kit';
import { startAuth, type AuthHarness, type RequestAs } from './harness.ts';

// A CLI session minted with an API key (`pier login` given a key) rides on that key: it is
// revoked in the key's revoke, expires no later than the key and never reaches further.
// Real auth, real Postgres and NATS; the session is minted exactly as through the gateway:
// Authenticate the key over gRPC, then POST /cli-sessions with the identity token auth signed.

let h: AuthHarness;
let admin: pg.Client;
let owner: RequestAs;
let ws: string;
let vpc: string;

async function rejected(p: Promise<unknown>): Promise<PierError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected the call to fail').toBeInstanceOf(PierError);
  return err as PierError;
}

/** POST /cli-sessions as the gateway sends it for a request carrying `token`. */
async function mintWith(token: string, body: object = {}): Promise<request.Response> {
  const { identity_token } = await h.authenticate(token);
  return request(h.url).post('/api/v1/cli-sessions').set(IDENTITY_HEADER, identity_token).send(body);
}

async function newKey(as: RequestAs, name: string, extra: object = {}): Promise<{ id: string; key: string; expires_at: string | null }> {
  return (
    await as
      .post(`/api/v1/workspaces/${ws}/api-keys`)
      .send({ name, ...extra })
      .expect(201)
  ).body;
}

async function epoch(): Promise<number> {
  return Number((await admin.query(`select epoch from auth.auth_epoch where id = 1`)).rows[0].epoch);
}

beforeAll(async () => {
  h = await startAuth();
  ws = h.running.bootstrap!.workspaceId;
  vpc = h.running.bootstrap!.vpcId;
  owner = await h.as({ subject: h.running.bootstrap!.userId, workspaceId: ws, role: 'owner' });
  admin = new pg.Client({ connectionString: h.db.adminUrl });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await h?.stop();
});

describe('a CLI session minted with an API key', () => {
  it('is revoked with the key, in the transaction that raises the auth epoch, and is refused on its next request', async () => {
    const key = await newKey(owner, 'login');
    const session = (await mintWith(key.key, { name: 'laptop' })).body;
    expect(session.api_key_id).toBe(key.id);
    expect((await h.authenticate(session.token, ws, vpc)).role).toBe('owner');

    const before = await epoch();
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.id}`).expect(204);
    expect(await epoch()).toBe(before + 1);
    expect(await rejected(h.authenticate(session.token, ws, vpc))).toMatchObject({ kind: 'unauthenticated', code: 'invalid_session' });
    expect((await rejected(h.authenticate(session.token))).code).toBe('invalid_session');
    // One transaction: now() is the transaction's start, so both rows carry the same instant.
    const rows = await admin.query(
      `select k.revoked_at as key_revoked, s.revoked_at as session_revoked from auth.cli_sessions s join auth.api_keys k on k.id = s.api_key_id where s.id = $1`,
      [session.id],
    );
    expect(rows.rows[0].session_revoked).not.toBeNull();
    expect(rows.rows[0].session_revoked).toEqual(rows.rows[0].key_revoked);
  });

  it('expires no later than the key, and dies when the key expires whatever its own row says', async () => {
    const key = await newKey(owner, 'two-days', { expires_in_days: 2 });
    const session = (await mintWith(key.key, { expires_in_days: 3650 })).body;
    expect(session.expires_at).toBe(key.expires_at);
    // A key that never expires leaves the asked lifetime alone.
    const forever = await newKey(owner, 'forever');
    const asked = (await mintWith(forever.key, { expires_in_days: 7 })).body;
    expect(Date.parse(asked.expires_at) - Date.parse(asked.created_at)).toBe(7 * 86_400_000);

    await h.authenticate(session.token, ws);
    // The key's expiry passes (told to the database); the session's own row is pushed out
    // to show the key, not the copy of its expiry, is what is judged.
    await admin.query(`update auth.api_keys set expires_at = now() - interval '1 second' where id = $1`, [key.id]);
    await admin.query(`update auth.cli_sessions set expires_at = now() + interval '30 days' where id = $1`, [session.id]);
    expect((await rejected(h.authenticate(session.token, ws))).code).toBe('invalid_session');
  });

  it("has the key's reach and no more: the creator's role at each request, nothing once removed", async () => {
    const carolId = (await owner.post(`/api/v1/workspaces/${ws}/members`).send({ email: 'carol@example.com', role: 'admin' }).expect(201)).body.user_id;
    const carol = await h.as({ subject: carolId, workspaceId: ws, role: 'admin' });
    const key = await newKey(carol, 'carol-login');
    const session = (await mintWith(key.key)).body;
    expect((await h.authenticate(session.token, ws)).role).toBe('admin');

    await owner.patch(`/api/v1/workspaces/${ws}/members/${carolId}`).send({ role: 'viewer' }).expect(200);
    expect((await h.authenticate(session.token, ws)).role).toBe('viewer');
    expect((await h.authenticate(key.key, ws)).role).toBe('viewer');

    await owner.delete(`/api/v1/workspaces/${ws}/members/${carolId}`).expect(204);
    expect(await rejected(h.authenticate(session.token, ws))).toMatchObject({ kind: 'not_found', code: 'workspace_not_found' });
    expect(await rejected(h.authenticate(key.key, ws))).toMatchObject({ kind: 'not_found', code: 'workspace_not_found' });
  });

  it('binds a session minted by such a session to the same key: a chain does not escape the revoke', async () => {
    const key = await newKey(owner, 'chain');
    const first = (await mintWith(key.key)).body;
    const second = (await mintWith(first.token)).body;
    expect(second.api_key_id).toBe(key.id);
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.id}`).expect(204);
    for (const token of [first.token, second.token]) expect((await rejected(h.authenticate(token))).code).toBe('invalid_session');
  });

  it('is refused (401) when the key was revoked after the identity token was signed, and nothing is kept', async () => {
    const key = await newKey(owner, 'late');
    const { identity_token } = await h.authenticate(key.key);
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.id}`).expect(204);
    const res = await request(h.url).post('/api/v1/cli-sessions').set(IDENTITY_HEADER, identity_token).send({ name: 'late' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid or expired API key', code: 'invalid_api_key' });
    expect((await admin.query(`select count(*)::int as n from auth.cli_sessions where api_key_id = $1`, [key.id])).rows[0].n).toBe(0);
  });

  it("leaves the user's own sessions alone: one minted without a key rides on none and outlives the user's keys", async () => {
    const key = await newKey(owner, 'unrelated');
    const own = (await owner.post('/api/v1/cli-sessions').send({}).expect(201)).body;
    expect(own.api_key_id).toBeNull();
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.id}`).expect(204);
    expect((await h.authenticate(own.token, ws)).role).toBe('owner');
    const listed = (await owner.get('/api/v1/cli-sessions?limit=200').expect(200)).body.items;
    expect(listed.find((s: { id: string }) => s.id === own.id)).toMatchObject({ api_key_id: null });
  });
});
