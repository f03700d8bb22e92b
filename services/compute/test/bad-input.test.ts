/**
 * Inputs an OpenAPI fuzzer (schemathesis) found answered with 500: strings carrying U+0000,
 * which PostgreSQL text/jsonb cannot store, reached the INSERT. Each must now be a 400 naming
 * the field, with nothing written. The service is created without an image so nothing is
 * deployed and no container is started.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startCompute, cleanDocker, type Compute } from './support.ts';

let c: Compute;

beforeAll(async () => {
  c = await startCompute();
});

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
});

const nul = (field: string) => ({ error: `${field}: must not contain NUL characters (U+0000)`, code: 'invalid_request', field });

describe('NUL characters in service input', () => {
  it('refuses them on create, update and env, and writes nothing', async () => {
    const created = await c.post(c.base, { name: 'plain' });
    expect(created.status).toBe(201);
    const svc = `${c.base}/${created.body.id}`;

    const cases: [string, string, unknown, string][] = [
      ['POST', c.base, { name: 'nul1', command: ['a\u0000b'] }, 'command.0'],
      ['POST', c.base, { name: 'nul2', args: ['ok', '\u0000'] }, 'args.1'],
      ['POST', c.base, { name: 'nul3', health_check_path: '/a\u0000b' }, 'health_check_path'],
      ['PATCH', svc, { command: ['a\u0000b'] }, 'command.0'],
      ['PATCH', svc, { args: ['a\u0000b'] }, 'args.0'],
      ['PUT', `${svc}/env`, { variables: [{ key: 'FOO', value: 'a\u0000b' }] }, 'variables.0.value'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await c.request(method, path, body);
      expect(res.status, `${method} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body).toEqual(nul(field));
    }

    const list = await c.get(c.base);
    expect(list.body.items.map((s: { name: string }) => s.name)).toEqual(['plain']);
    const after = await c.get(svc);
    expect(after.body.command).toBeNull();
    expect(after.body.args).toBeNull();
    expect((await c.get(`${svc}/env`)).body).toEqual({ variables: [] });
    expect((await c.get(`${svc}/deployments`)).body.items).toEqual([]);
  });
});
