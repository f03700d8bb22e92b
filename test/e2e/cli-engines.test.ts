// The built `pier` CLI on `db engines`: the offer of the platform's docker cluster as a
// table and as JSON, through the gateway, which refuses the path without a token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, type CliHarness } from './cli-support.ts';

let cli: CliHarness;

beforeAll(async () => {
  cli = await startCli();
  expect((await cli.login()).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await cli?.stop();
});

describe('pier db engines', () => {
  it('prints the versions (default marked), instance types and bounds of each engine', async () => {
    const r = await cli.pier(['db', 'engines']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^ENGINE\s+SERVER\s+VERSIONS\s+INSTANCE TYPES\s+REPLICAS\s+STORAGE$/m);
    expect(r.stdout).toMatch(
      /^postgresql\s+PostgreSQL\s+15 \(default\)\s+svc\.nano \(default\), svc\.micro, .*svc\.xlarge\s+0-5\s+1-1024 GB \(not enforced\)$/m,
    );
    expect(r.stdout).toMatch(
      /^mysql\s+MariaDB\s+10\.11 \(default\)\s+svc\.micro, svc\.small \(default\), .*svc\.xlarge\s+1-5, odd\s+1-1024 GB \(not enforced\)$/m,
    );
    expect(r.stdout).toContain('On the docker cluster.');
  });

  it('gives the API answer as is with --json', async () => {
    const offer = await cli.json(['db', 'engines']);
    expect(offer.adapter).toBe('docker');
    expect(offer.items.map((e: { engine: string; default_version: string }) => [e.engine, e.default_version])).toEqual([
      ['postgresql', '15'],
      ['mysql', '10.11'],
    ]);
  });

  it('is refused by the gateway without a token, with the JSON error', async () => {
    const res = await fetch(`${cli.platform.gatewayUrl}/api/v1/database-engines`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'missing_token', error: expect.stringContaining('Authorization') });
    const doc = await (await fetch(`${cli.platform.gatewayUrl}/api/v1/openapi.json`)).json();
    expect(doc.paths['/api/v1/database-engines'].get['x-pier-role']).toBe('any authenticated user');
  });
});
