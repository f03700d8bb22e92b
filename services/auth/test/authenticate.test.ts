import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { IdentityVerifier, PierError } from '@pier/kit';
import { startAuth, type AuthHarness, type RequestAs } from './harness.ts';

// gRPC Authenticate against a real auth (real Postgres, real NATS), with a local
// OIDC-shaped issuer: an HTTP server publishing a JWKS for a key generated here.

const ISSUER = 'https://idp.pier.test';
const AUDIENCE = 'pier-dashboard';

let h: AuthHarness;
let idp: {
  url: string;
  sign(claims: Record<string, unknown>, opts?: { aud?: string; iss?: string; exp?: string | number; key?: 'idp' | 'rogue' }): Promise<string>;
  close(): Promise<void>;
};
let admin: pg.Client;
let owner: RequestAs;
let ws: string;
let vpc: string;
let ownerKey: string;
let ownerId: string;

async function startIdp() {
  const good = await generateKeyPair('ES256');
  const rogue = await generateKeyPair('ES256');
  const jwk: JWK = { ...(await exportJWK(good.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const server = http.createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    async sign(claims: Record<string, unknown>, opts: { aud?: string; iss?: string; exp?: string | number; key?: 'idp' | 'rogue' } = {}) {
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(opts.iss ?? ISSUER)
        .setAudience(opts.aud ?? AUDIENCE)
        .setSubject(String(claims.email ?? 'nobody'))
        .setIssuedAt()
        .setExpirationTime(opts.exp ?? '5m')
        .sign((opts.key === 'rogue' ? rogue : good).privateKey);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function rejected(p: Promise<unknown>): Promise<PierError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected the call to fail').toBeInstanceOf(PierError);
  return err as PierError;
}

async function addMember(email: string, role: string): Promise<string> {
  const res = await owner.post(`/api/v1/workspaces/${ws}/members`).send({ email, role }).expect(201);
  return res.body.user_id as string;
}

beforeAll(async () => {
  idp = await startIdp();
  h = await startAuth({ PIER_OIDC_ISSUER: ISSUER, PIER_OIDC_JWKS_URL: idp.url, PIER_OIDC_AUDIENCE: AUDIENCE });
  const boot = h.running.bootstrap!;
  ws = boot.workspaceId;
  vpc = boot.vpcId;
  ownerKey = boot.token!;
  ownerId = boot.userId;
  owner = await h.as({ subject: ownerId, workspaceId: ws, role: 'owner' });
  admin = new pg.Client({ connectionString: h.db.adminUrl });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await h?.stop();
  await idp?.close();
});

describe('API keys', () => {
  it('resolves the bootstrap key to its owner, with a verifiable identity token', async () => {
    const res = await h.authenticate(ownerKey, ws, vpc);
    expect(res).toMatchObject({ user_id: ownerId, email: 'owner@localhost', role: 'owner' });
    expect(res.expires_in).toBeGreaterThan(30);
    expect(res.expires_in).toBeLessThanOrEqual(60);
    const identity = await (await IdentityVerifier.fromJwk(h.keys.publicJwk)).verify(res.identity_token);
    expect(identity).toMatchObject({ kind: 'user', subject: ownerId, email: 'owner@localhost', workspaceId: ws, vpcId: vpc, role: 'owner' });
  });

  it('answers without a role when the path names no workspace', async () => {
    const res = await h.authenticate(ownerKey);
    expect(res.role).toBe('');
    const identity = await (await IdentityVerifier.fromJwk(h.keys.publicJwk)).verify(res.identity_token);
    expect(identity.workspaceId).toBeUndefined();
  });

  it('refuses unknown and malformed keys with the spec message', async () => {
    for (const token of ['sk-' + '0'.repeat(64), 'sk-abc', 'sk-' + 'A'.repeat(64), ownerKey + '0']) {
      const err = await rejected(h.authenticate(token, ws));
      expect(err.kind).toBe('unauthenticated');
      expect(err.message).toBe('invalid or expired API key');
      expect(err.code).toBe('invalid_api_key');
    }
  });

  it('refuses a missing token', async () => {
    const err = await rejected(h.authenticate('', ws));
    expect(err).toMatchObject({ kind: 'unauthenticated', code: 'missing_token' });
  });

  it('stops a revoked key on its very next request', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'to-revoke' }).expect(201);
    await h.authenticate(created.body.key, ws);
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${created.body.id}`).expect(204);
    const err = await rejected(h.authenticate(created.body.key, ws));
    expect(err).toMatchObject({ kind: 'unauthenticated', message: 'invalid or expired API key' });
    // Also without a workspace in the path.
    await rejected(h.authenticate(created.body.key));
  });

  it('stops a key whose expiry has passed', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'short-lived', expires_in_days: 1 }).expect(201);
    await h.authenticate(created.body.key, ws);
    // A day passing, told to the database: expiry is judged by its clock, on every request.
    await admin.query(`update auth.api_keys set expires_at = now() - interval '1 second' where id = $1`, [created.body.id]);
    const err = await rejected(h.authenticate(created.body.key, ws));
    expect(err).toMatchObject({ kind: 'unauthenticated', message: 'invalid or expired API key' });
  });

  it('records last_used_at in the database within about a second of a use', async () => {
    const created = await owner.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'usage' }).expect(201);
    expect(created.body.last_used_at).toBeNull();
    const before = Date.now();
    await h.authenticate(created.body.key, ws);
    let stored: Date | null = null;
    for (let i = 0; i < 50 && !stored; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stored = (await admin.query(`select last_used_at from auth.api_keys where id = $1`, [created.body.id])).rows[0].last_used_at;
    }
    expect(stored).not.toBeNull();
    expect(stored!.getTime()).toBeGreaterThanOrEqual(before - 5);
    const list = await owner.get(`/api/v1/workspaces/${ws}/api-keys`).expect(200);
    const listed = list.body.items.find((k: { id: string }) => k.id === created.body.id);
    expect(listed.last_used_at).toBe(stored!.toISOString());
  });

  it('follows its creator: downgrade takes effect at once, removal ends access there', async () => {
    const carolId = await addMember('carol@example.com', 'admin');
    const carol = await h.as({ subject: carolId, workspaceId: ws, role: 'admin' });
    const key = (await carol.post(`/api/v1/workspaces/${ws}/api-keys`).send({ name: 'carol-ci' }).expect(201)).body.key as string;
    expect((await h.authenticate(key, ws)).role).toBe('admin');

    await owner.patch(`/api/v1/workspaces/${ws}/members/${carolId}`).send({ role: 'viewer' }).expect(200);
    const downgraded = await h.authenticate(key, ws);
    expect(downgraded.role).toBe('viewer');
    // The identity token handed out says viewer too: a role change never reuses a token.
    const identity = await (await IdentityVerifier.fromJwk(h.keys.publicJwk)).verify(downgraded.identity_token);
    expect(identity.role).toBe('viewer');

    await owner.delete(`/api/v1/workspaces/${ws}/members/${carolId}`).expect(204);
    const err = await rejected(h.authenticate(key, ws));
    expect(err).toMatchObject({ kind: 'not_found', message: 'workspace not found', code: 'workspace_not_found' });
  });

  it('reaches every workspace of its creator and no other; VPCs must belong to the workspace', async () => {
    const second = (await (await h.as({ subject: ownerId })).post('/api/v1/workspaces').send({ name: 'second' }).expect(201)).body;
    const res = await h.authenticate(ownerKey, second.id, second.default_vpc_id);
    expect(res.role).toBe('owner');

    // A workspace of someone else: indistinguishable from one that does not exist.
    const daveId = await addMember('dave@example.com', 'viewer');
    const dave = await h.as({ subject: daveId });
    const foreign = (await dave.post('/api/v1/workspaces').send({ name: 'daves' }).expect(201)).body;
    for (const [w, v, code] of [
      [foreign.id, '', 'workspace_not_found'],
      ['3f1c1f9e-0000-4000-8000-000000000000', '', 'workspace_not_found'],
      ['not-a-uuid', '', 'workspace_not_found'],
      [ws, second.default_vpc_id, 'vpc_not_found'],
      [ws, foreign.default_vpc_id, 'vpc_not_found'],
      [ws, 'not-a-uuid', 'vpc_not_found'],
      [ws, '3f1c1f9e-0000-4000-8000-000000000000', 'vpc_not_found'],
    ] as const) {
      const err = await rejected(h.authenticate(ownerKey, w, v));
      expect(err.kind, `${w} ${v}`).toBe('not_found');
      expect(err.code).toBe(code);
    }
    // A bad token is 401 whatever the path says.
    expect((await rejected(h.authenticate('sk-nope', 'not-a-uuid'))).kind).toBe('unauthenticated');
  });
});

describe('CLI sessions', () => {
  it('resolves a session token, and stops it once revoked or expired', async () => {
    const erinId = await addMember('erin@example.com', 'developer');
    const erin = await h.as({ subject: erinId });
    const s1 = (await erin.post('/api/v1/cli-sessions').send({ name: 'laptop' }).expect(201)).body;
    expect(s1.token).toMatch(/^[0-9a-f]{64}$/);
    const res = await h.authenticate(s1.token, ws, vpc);
    expect(res).toMatchObject({ user_id: erinId, email: 'erin@example.com', role: 'developer' });

    await erin.delete(`/api/v1/cli-sessions/${s1.id}`).expect(204);
    expect(await rejected(h.authenticate(s1.token, ws))).toMatchObject({ kind: 'unauthenticated', code: 'invalid_session' });

    const s2 = (await erin.post('/api/v1/cli-sessions').send({}).expect(201)).body;
    await h.authenticate(s2.token);
    await admin.query(`update auth.cli_sessions set expires_at = now() - interval '1 second' where id = $1`, [s2.id]);
    expect(await rejected(h.authenticate(s2.token))).toMatchObject({ kind: 'unauthenticated', code: 'invalid_session' });

    for (const token of ['deadbeef', 'f'.repeat(64), 'not hex at all']) {
      expect((await rejected(h.authenticate(token))).kind).toBe('unauthenticated');
    }
  });
});

describe('OIDC JWTs', () => {
  it('creates the user on first sign-in and applies their role once they are a member', async () => {
    const token = await idp.sign({ email: 'Frank@Example.com', email_verified: true });
    const first = await h.authenticate(token);
    expect(first.email).toBe('frank@example.com');
    expect(await rejected(h.authenticate(token, ws))).toMatchObject({ kind: 'not_found', code: 'workspace_not_found' });

    const added = await owner.post(`/api/v1/workspaces/${ws}/members`).send({ email: 'frank@example.com', role: 'developer' }).expect(201);
    expect(added.body.user_id).toBe(first.user_id);
    const res = await h.authenticate(token, ws, vpc);
    expect(res).toMatchObject({ user_id: first.user_id, role: 'developer' });
  });

  it('refuses tokens of the wrong audience, issuer, signer, age or without an e-mail', async () => {
    const bad = [
      await idp.sign({ email: 'x@example.com' }, { aud: 'someone-else' }),
      await idp.sign({ email: 'x@example.com' }, { iss: 'https://evil.test' }),
      await idp.sign({ email: 'x@example.com' }, { key: 'rogue' }),
      await idp.sign({ email: 'x@example.com' }, { exp: Math.floor(Date.now() / 1000) - 120 }),
      await idp.sign({ name: 'no email' }),
      'not.a.jwt',
    ];
    for (const token of bad) {
      const err = await rejected(h.authenticate(token, ws));
      expect(err.kind).toBe('unauthenticated');
      expect(err.code).toBe('invalid_token');
    }
    const users = await admin.query(`select count(*)::int as n from auth.users where email = 'x@example.com'`);
    expect(users.rows[0].n).toBe(0);
  });
});

describe('OIDC e-mail verification', () => {
  it('refuses a JWT whose e-mail the provider does not say is verified, and creates no user', async () => {
    // The user is found by e-mail: an unverified address would sign in as whoever owns it.
    const victim = await addMember('victim@example.com', 'admin');
    for (const claims of [
      { email: 'victim@example.com' },
      { email: 'victim@example.com', email_verified: false },
      { email: 'victim@example.com', email_verified: 'true' },
      { email: 'victim@example.com', email_verified: 1 },
      { email: 'newcomer@example.com' },
    ]) {
      const err = await rejected(h.authenticate(await idp.sign(claims), ws));
      expect(err, JSON.stringify(claims)).toMatchObject({
        kind: 'unauthenticated',
        code: 'email_not_verified',
        message: 'the identity provider has not verified the e-mail address of this token (email_verified must be true)',
      });
    }
    const users = await admin.query(`select count(*)::int as n from auth.users where email = 'newcomer@example.com'`);
    expect(users.rows[0].n).toBe(0);
    // The same address, verified, signs in as that member.
    const ok = await h.authenticate(await idp.sign({ email: 'victim@example.com', email_verified: true }), ws);
    expect(ok).toMatchObject({ user_id: victim, role: 'admin' });
  });
});
