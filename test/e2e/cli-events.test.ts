// `pier events` as a user runs it: the audit log after a write made with the CLI (its own
// CLI session is the credential), filtered; and --follow printing new events until Ctrl-C.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '@pier/testing';
import { startCli, type CliHarness } from './cli-support.ts';

let cli: CliHarness;
let receiver: http.Server;
let hookUrl: string;
const received: { type: string; id: string | undefined }[] = [];
beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ type: (JSON.parse(body) as { type: string }).type, id: req.headers['webhook-id'] as string | undefined });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  cli = await startCli({ env: { events: { PIER_EVENTS_WEBHOOK_ALLOW_HTTP: 'true', PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } } });
  expect((await cli.login()).code).toBe(0);
}, 180_000);
afterAll(async () => {
  await cli?.stop();
  await new Promise((r) => receiver?.close(r));
});

describe('pier events', () => {
  it('lists a write made with the CLI, naming the CLI session, and filters by type', async () => {
    expect((await cli.pier(['secrets', 'create', 'cli-audited', 'TOKEN=never-shown-9d1'])).code).toBe(0);
    const events: any[] = await until(
      () => cli.json(['events', '--type', 'secret.*', '--since', '1h']),
      (items: any[]) => items.some((e) => e.type === 'secret.created'),
      20_000,
      200,
    );
    const created = events.find((e) => e.type === 'secret.created');
    expect(created.resource).toMatchObject({ kind: 'secret', name: 'cli-audited' });
    expect(created.actor.credential.kind).toBe('cli_session');
    expect(created.source_ip).toBe('127.0.0.1');
    expect(JSON.stringify(events)).not.toContain('never-shown-9d1');
    const table = await cli.pier(['events', '--type', 'secret.created']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/secret\.created\s+secret cli-audited\s+owner@localhost \(cli_session/);
    const bad = await cli.pier(['events', '--type', 'secret*']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('type');
  });

  it('--follow prints each new event until Ctrl-C', async () => {
    const child = spawn(process.execPath, [cli.bin, '--json', 'events', '--follow', '--type', 'secret.*'], {
      env: { ...process.env, PIER_CONFIG_DIR: cli.dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    // The stream is open (its first read done) before the write.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await cli.pier(['secrets', 'create', 'followed', 'K=v'])).code).toBe(0);
    await until(
      async () => out,
      (o) => o.includes('"followed"'),
      20_000,
      100,
    );
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; resource: { name: string } });
    expect(lines.map((l) => `${l.type} ${l.resource.name}`)).toEqual(['secret.created followed']);
  }, 60_000);
});

describe('pier webhooks', () => {
  it('creates (printing the secret once), lists, tests, shows deliveries, redelivers and deletes', async () => {
    const created = await cli.pier(['webhooks', 'create', hookUrl, '--event', 'secret.*', '--description', 'cli']);
    expect(created.code).toBe(0);
    expect(created.stdout.trim()).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const [hook] = await cli.json(['webhooks', 'list']);
    expect(hook).toMatchObject({ url: hookUrl, events: ['secret.*'], description: 'cli', enabled: true });
    expect(JSON.stringify(hook)).not.toContain(created.stdout.trim());

    expect((await cli.pier(['webhooks', 'test', 'cli'])).code).toBe(0);
    await until(
      async () => received.filter((r) => r.type === 'webhook.test'),
      (rs) => rs.length === 1,
      20_000,
      100,
    );
    const deliveries = await until(
      () => cli.json(['webhooks', 'deliveries', hook.id]),
      (ds: any[]) => ds[0]?.state === 'succeeded',
      20_000,
      200,
    );
    expect(deliveries[0]).toMatchObject({ event_type: 'webhook.test', attempts: [{ status_code: 200 }] });
    expect((await cli.pier(['webhooks', 'redeliver', hook.id, deliveries[0].id])).code).toBe(0);
    const twice = await until(
      async () => received.filter((r) => r.type === 'webhook.test'),
      (rs) => rs.length === 2,
      20_000,
      100,
    );
    expect(twice[1]!.id).toBe(deliveries[0].id);
    const rotated = await cli.pier(['webhooks', 'rotate-secret', hook.id]);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout.trim()).toMatch(/^whsec_/);
    expect((await cli.pier(['webhooks', 'delete', hook.id, '--yes'])).code).toBe(0);
    expect(await cli.json(['webhooks', 'list'])).toEqual([]);
  }, 60_000);
});
