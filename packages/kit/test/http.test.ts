import { describe, it, expect, beforeAll } from 'vitest';
import request from 'supertest';
import { z } from 'zod';
import { Writable } from 'node:stream';
import {
  createServiceApp,
  createLogger,
  defineRoute,
  generateIdentityKeys,
  importIdentityKey,
  IdentityVerifier,
  signIdentity,
  IDENTITY_HEADER,
  ConflictError,
  refuseNul,
  type Identity,
} from '../src/index.ts';

const WS = '11111111-1111-4111-8111-111111111111';
const VPC = '22222222-2222-4222-8222-222222222222';

const routes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/things',
    summary: 'list things',
    tag: 'things',
    access: 'Member',
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
    responses: { 200: { description: 'ok' } },
    handler: async ({ query }) => ({ status: 200, body: { limit: query.limit } }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/things',
    summary: 'create a thing',
    tag: 'things',
    access: 'Admin',
    body: z.strictObject({ name: z.string().min(1).max(63), kind: z.enum(['a', 'b']).default('a') }),
    responses: { 201: { description: 'created' } },
    handler: async ({ body }) => {
      if (body.name === 'taken') throw new ConflictError('thing name already used', 'already_exists');
      return { status: 201, body };
    },
  }),
];

let token: (identity: Partial<Identity>) => Promise<string>;
let app: ReturnType<typeof createServiceApp>;
const logged: string[] = [];

beforeAll(async () => {
  const keys = await generateIdentityKeys();
  const privateKey = await importIdentityKey(keys.privateJwk);
  token = (identity) => signIdentity(privateKey, { kind: 'user', subject: 'u1', workspaceId: WS, vpcId: VPC, role: 'viewer', ...identity }, 60);
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged.push(String(chunk));
      done();
    },
  });
  app = createServiceApp({
    service: 'test',
    logger: createLogger('test', 'info', sink),
    verifier: await IdentityVerifier.fromJwk(keys.publicJwk),
    routes,
  });
});

const base = `/api/v1/workspaces/${WS}/vpcs/${VPC}/things`;

describe('service app', () => {
  it('lets any member read and parses the query', async () => {
    const res = await request(app)
      .get(`${base}?limit=7`)
      .set(IDENTITY_HEADER, await token({ role: 'viewer' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ limit: 7 });
    expect(res.headers['x-request-id']).toMatch(/.+/);
  });

  it('refuses writes below Admin with the spec message', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      const res = await request(app)
        .post(base)
        .set(IDENTITY_HEADER, await token({ role }))
        .send({ name: 'x' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'insufficient workspace permissions', code: 'forbidden' });
    }
    for (const role of ['owner', 'admin'] as const) {
      const res = await request(app)
        .post(base)
        .set(IDENTITY_HEADER, await token({ role }))
        .send({ name: 'x' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ name: 'x', kind: 'a' });
    }
  });

  it('refuses an identity issued for another workspace or VPC, and none at all', async () => {
    const other = await token({ role: 'owner', workspaceId: '33333333-3333-4333-8333-333333333333' });
    expect((await request(app).get(base).set(IDENTITY_HEADER, other)).status).toBe(403);
    const otherVpc = await token({ role: 'owner', vpcId: '33333333-3333-4333-8333-333333333333' });
    expect((await request(app).get(base).set(IDENTITY_HEADER, otherVpc)).status).toBe(403);
    const none = await request(app).get(base);
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('unauthenticated');
    const forged = await request(app).get(base).set(IDENTITY_HEADER, 'a.b.c');
    expect(forged.status).toBe(401);
  });

  it('names the field of bad input and never answers 500', async () => {
    const owner = await token({ role: 'owner' });
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: 5 }, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(64) }, 'name'],
      [{ name: 'x', kind: 'c' }, 'kind'],
      [{ name: 'x', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await request(app)
        .post(base)
        .set(IDENTITY_HEADER, owner)
        .send(body as object);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.error).toContain(field);
    }
    const malformed = await request(app).post(base).set(IDENTITY_HEADER, owner).set('content-type', 'application/json').send('{"name":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: 'malformed JSON body', code: 'malformed_json' });
    const noJson = await request(app).post(base).set(IDENTITY_HEADER, owner).set('content-type', 'text/plain').send('name=x');
    expect(noJson.status).toBe(400);
    const badQuery = await request(app).get(`${base}?limit=0`).set(IDENTITY_HEADER, owner);
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.error).toContain('limit');
  });

  // Found by schemathesis: PostgreSQL cannot store U+0000, so it used to reach the INSERT
  // and come back as a 500.
  it('refuses NUL characters in body and query with a 400 naming the field', async () => {
    const owner = await token({ role: 'owner' });
    const res = await request(app).post(base).set(IDENTITY_HEADER, owner).send({ name: 'a\u0000b' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'name: must not contain NUL characters (U+0000)', code: 'invalid_request', field: 'name' });
    expect(() => refuseNul({ command: ['ok', 'x\u0000'] }, 'body')).toThrow('command.1: must not contain NUL');
    expect(() => refuseNul({ values: { ['k\u0000']: 'v' } }, 'body')).toThrow('values.k\u0000: must not contain NUL');
    expect(() => refuseNul({ a: [{ b: 1, c: null, d: 'fine' }] }, 'body')).not.toThrow();
  });

  it('maps domain conflicts to 409 and unknown paths to a JSON 404', async () => {
    const owner = await token({ role: 'owner' });
    const conflict = await request(app).post(base).set(IDENTITY_HEADER, owner).send({ name: 'taken' });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ error: 'thing name already used', code: 'already_exists' });
    const missing = await request(app).get('/api/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('route_not_found');
  });

  it('keeps query strings and identity tokens out of access logs', async () => {
    const owner = await token({ role: 'owner' });
    logged.length = 0;
    await request(app)
      .get(`${base}?limit=3&access_token=sk-${'a'.repeat(64)}`)
      .set(IDENTITY_HEADER, owner);
    const text = logged.join('');
    expect(text).toContain('"path":"' + base + '"');
    expect(text).not.toContain('access_token');
    expect(text).not.toContain(owner);
  });

  it('leaves health checks out of the info-level access log', async () => {
    logged.length = 0;
    expect((await request(app).get('/healthz')).status).toBe(200);
    await request(app).get('/api/v1/nothing-here');
    const paths = logged
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request')
      .map((l) => l.path);
    expect(paths).toEqual(['/api/v1/nothing-here']);
  });

  it('describes its routes as OpenAPI from the same schemas', async () => {
    const res = await request(app).get('/internal/openapi');
    const post = res.body[`/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/things`].post;
    expect(post.requestBody.content['application/json'].schema.properties.kind.enum).toEqual(['a', 'b']);
    expect(post.requestBody.content['application/json'].schema.required).toEqual(['name']);
    expect(post['x-pier-role']).toBe('Admin');
  });
});

describe('bodies', () => {
  it('reads a missing body as {} so all-default routes can be called bare', async () => {
    const owner = await token({ role: 'owner' });
    const bare = await request(app).post(base).set(IDENTITY_HEADER, owner);
    expect(bare.status).toBe(400);
    expect(bare.body.error).toContain('name');
  });
});
