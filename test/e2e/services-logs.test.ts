// Service logs end to end, through the gateway with an API key, on the docker cluster: recent
// lines, the followed stream (server-sent events passed through by the gateway, with its
// keep-alive comments), history, and `pier services logs` run as a user would.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture, readEventStream, until } from '@pier/testing';
import { startCli, type CliHarness } from './cli-support.ts';
import { cleanVpcs } from './services-support.ts';
import type { Api } from '../support/platform.ts';

const PRINTER = 'i=0; while :; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); sleep 0.2; done';

let cli: CliHarness;
let owner: Api;
let base: string;
let printer: any;
const gatewayLog = new LogCapture();

beforeAll(async () => {
  cli = await startCli({
    gatewayLog,
    env: { compute: { PIER_COMPUTE_SSE_KEEPALIVE_MS: '300', PIER_COMPUTE_LOG_FLUSH_MS: '100', PIER_COMPUTE_LOG_SCAN_MS: '500' } },
  });
  expect((await cli.login()).code).toBe(0);
  const p = cli.platform;
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
  const res = await owner.post(base, {
    name: 'printer',
    service_type: 'worker',
    image: 'pier/debian-base:bookworm',
    command: ['sh', '-c', PRINTER],
    min_replicas: 2,
  });
  expect(res.status).toBe(201);
  printer = res.body;
  await until(
    () => owner.get(`${base}/${printer.id}/logs?limit=100`).then((r) => r.body.items as any[]),
    // At least 20 of each replica: the first test asks for replica 1's last 20.
    (items) => ['0', '1'].every((r) => (items ?? []).filter((l) => l.replica === r).length >= 20),
  );
}, 120_000);

afterAll(async () => {
  await cli?.stop();
  if (cli) await cleanVpcs(cli.platform.bootstrap.vpcId);
}, 60_000);

const follow = (query: string, signal: AbortSignal) =>
  fetch(`${cli.platform.gatewayUrl}${base}/${printer.id}/logs?follow=true&${query}`, {
    headers: { authorization: `Bearer ${cli.platform.bootstrap.token}`, accept: 'text/event-stream' },
    signal,
  });

describe('logs through the gateway', () => {
  it('answers the recent lines of both replicas', async () => {
    const res = await owner.get(`${base}/${printer.id}/logs?limit=20&replica=1`);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(20);
    expect(res.body.items.every((l: any) => l.replica === '1' && /^(out|err) \d+$/.test(l.message))).toBe(true);
  });

  it('streams new lines as server-sent events', async () => {
    const controller = new AbortController();
    const asked = new Date().toISOString();
    const res = await follow('limit=2', controller.signal);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const read = await readEventStream(res, (r) => r.events.filter((e) => e.data.timestamp > asked).length >= 8);
    controller.abort();
    const fresh = read.events.map((e) => e.data).filter((l) => l.timestamp > asked);
    expect(new Set(fresh.map((l) => l.replica))).toEqual(new Set(['0', '1']));
    expect(read.events.every((e) => e.event === 'line')).toBe(true);
  });

  it('passes the keep-alive comments through while the stream is quiet', async () => {
    const controller = new AbortController();
    const res = await follow('replica=9', controller.signal);
    const read = await readEventStream(res, (r) => r.comments.length >= 2, 5000);
    controller.abort();
    expect(read.comments).toContain('keep-alive');
    expect(read.events).toEqual([]);
  });

  it('answers history with a cursor, and a bad value as a 400 naming it', async () => {
    const lines = await until(
      () => owner.get(`${base}/${printer.id}/logs/history?limit=10`).then((r) => r.body),
      (b) => b.items.length === 10 && b.next_cursor !== null,
    );
    const next = await owner.get(`${base}/${printer.id}/logs/history?limit=10&cursor=${lines.next_cursor}`);
    expect(next.status).toBe(200);
    expect(next.body.items[0].timestamp >= lines.items[9].timestamp).toBe(true);
    const bad = await owner.get(`${base}/${printer.id}/logs/history?start=tomorrow`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request', field: 'start' });
  });

  it('never logs the token', () => {
    expect(gatewayLog.text).toContain('/logs');
    expect(gatewayLog.text).not.toContain(cli.platform.bootstrap.token);
  });
});

describe('pier services logs', () => {
  it('prints the recent lines, for people and as JSON', async () => {
    const human = await cli.pier(['services', 'logs', 'printer', '--limit', '6']);
    expect(human.code).toBe(0);
    const printed = human.stdout.trim().split('\n');
    expect(printed).toHaveLength(6);
    for (const line of printed) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[[01]( stderr)?\] (out|err) \d+$/);
    const json = await cli.json(['services', 'logs', 'printer', '--limit', '5', '--replica', '0']);
    expect(json).toHaveLength(5);
    expect(json.every((l: any) => l.replica === '0')).toBe(true);
  });

  it('prints history, every page of it, with --q', async () => {
    const lines = await cli.json(['services', 'logs', 'printer', '--history', '--start', '1h', '--q', 'err 1']);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l: any) => l.message.includes('err 1'))).toBe(true);
    const capped = await cli.json(['services', 'logs', 'printer', '--history', '--limit', '7']);
    expect(capped).toHaveLength(7);
  });

  it('follows until interrupted, and exits 0', async () => {
    const child = spawn(process.execPath, [cli.bin, 'services', 'logs', 'printer', '--follow', '--limit', '1'], {
      env: { ...process.env, PIER_CONFIG_DIR: cli.dir },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await until(
      async () => out.split('\n').filter(Boolean).length,
      (n) => n >= 6,
      20_000,
    );
    const code = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.kill('SIGINT');
    expect(await code).toBe(0);
  });

  it('refuses --follow with --history as a usage error', async () => {
    const r = await cli.pier(['services', 'logs', 'printer', '--follow', '--history']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--follow');
  });
});
