// Pier upgraded under load on the REAL single-node Kubernetes (issue 29): the chart with
// two of each service, a steady mixed load through the gateway (reads and writes of
// services, secrets and API keys, about 50 requests a second, writes with an
// Idempotency-Key as the SDK sends them, the SDK's retries on), while `helm upgrade` rolls
// each service in turn and then all at once. No request may fail, every acknowledged write
// must be there exactly once, and a log follow and a shell session, told to reconnect
// (kit's drain.ts: a `reconnect` event, close code 1012), reconnect and go on. Then, under
// the same load, one pod of each service is killed with no grace period (for compute,
// databases and secrets the one leading their reconciler, for events its consumer's): no
// write may be lost or doubled, nor any secret's creation in the audit log (events),
// the requests that failed are counted and printed, and every loop the killed pod led is
// led by the other within a lease's lifetime. Log collection, one leader's loop, must have
// stored each line of the service once, none skipped, through all of it.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import WebSocket from 'ws';
import { LEASE_TTL_MS, vpcNamespace } from '@pier/kit';
import { createPierClient, unwrap, type PierClient } from '@pier/sdk';
import { until } from '@pier/testing';
import { bootstrapKey, CHART, chartBench, RELEASE, type ChartBench } from './chart-support.ts';

const TINY_HTTP = 'pier/tiny-http:1';
/** A request started every this many ms: 50 a second. */
const PACE_MS = 20;
const PARTS = ['gateway', 'auth', 'compute', 'databases', 'secrets', 'events'] as const;
/** The services with background loops run by one leader each (leaderOnly in their server.ts). */
const LOOPS = new Set(['compute', 'databases', 'secrets', 'events']);

let bench: ChartBench;
let failed = false;

beforeAll(async () => {
  bench = await chartBench('pier-roll');
});

afterAll(async () => {
  await bench?.cleanUp(failed);
}, 180_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A log follow that reconnects when told to, as the CLI's does: each line `tick N` once, in order. */
function followTicks(baseUrl: string, token: string, path: string, stop: AbortSignal) {
  const ticks: number[] = [];
  let reconnects = 0;
  let newest = '';
  const done = (async () => {
    while (!stop.aborted) {
      const url = `${baseUrl}${path}/logs?follow=true${newest ? `&since=${encodeURIComponent(newest)}` : ''}`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: stop }).catch(() => undefined);
      if (!res?.ok || !res.body) {
        await sleep(500);
        continue;
      }
      let text = '';
      let restarted = false;
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += Buffer.from(chunk).toString();
          for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            if (block.startsWith('event: reconnect')) restarted = true;
            if (!block.startsWith('event: line')) continue;
            const line = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as { timestamp: string; message: string };
            const m = /^tick (\d+)$/.exec(line.message.trim());
            // A line at or before the newest already seen came again with the resumed recent lines.
            if (!m || line.timestamp <= newest) continue;
            newest = line.timestamp;
            ticks.push(Number(m[1]));
          }
        }
      } catch {
        // Aborted, or the connection cut: reconnect as for a `reconnect` event.
      }
      if (restarted) reconnects++;
    }
  })();
  return { ticks, reconnects: () => reconnects, done };
}

/** A shell that runs `echo` every second and opens again when closed: how many answered, and how often it reopened. */
function keepShell(wsUrl: string, stop: AbortSignal) {
  let answered = 0;
  let reopened = 0;
  const restarts: number[] = [];
  const done = (async () => {
    for (let n = 0; !stop.aborted;) {
      const socket = new WebSocket(wsUrl);
      const opened = await new Promise<boolean>((resolve) => socket.once('open', () => resolve(true)).once('error', () => resolve(false)));
      if (!opened) {
        await sleep(500);
        continue;
      }
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      let output = '';
      socket.on('message', (data: Buffer, binary) => binary && (output += data.toString()));
      let open = true;
      void closed.then(() => (open = false));
      while (open && !stop.aborted) {
        n++;
        socket.send(Buffer.from(`echo alive-${n}\n`), { binary: true });
        const t = Date.now();
        while (open && !output.includes(`alive-${n}\n`) && Date.now() - t < 10_000) await sleep(50);
        if (output.includes(`alive-${n}\n`)) answered++;
        await sleep(1000);
      }
      socket.close();
      const code = await closed;
      if (!stop.aborted) {
        reopened++;
        restarts.push(code);
      }
    }
  })();
  return { answered: () => answered, reopened: () => reopened, restarts, done };
}

describe('a rolling upgrade under load', () => {
  it('rolls each service in turn and then all at once: no failed request, every write once, follows and shells go on', async () => {
    bench.k.requireNode();
    onTestFailed(() => {
      failed = true;
    });
    const { k, ns, keysFile, tool } = bench;
    // The load is one owner's token: no rate limit may refuse it.
    const limits = ['--set', 'gateway.rateLimit.tokenPerHour=100000000', '--set', 'gateway.rateLimit.tokenBurst=100000'];
    await tool('helm', ['install', RELEASE, CHART, '-n', ns, '-f', keysFile, ...limits, '--wait', '--wait-for-jobs', '--timeout', '300s']);
    const gatewayIp = (await k.get(`/api/v1/namespaces/${ns}/services/${RELEASE}-gateway`)).spec.clusterIP as string;
    const apiUrl = `http://${gatewayIp}:7100`;
    const token = await bootstrapKey(k, ns);
    // An answer that is not Pier's (no JSON error body) is kept whole, to say which server
    // gave it: the kills once drew 404s with no Pier body from an unknown answerer.
    const foreign: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.ok || (res.headers.get('content-type') ?? '').includes('application/json') || foreign.length >= 5) return res;
      const body = (await res.clone().text()).slice(0, 200);
      const headers = JSON.stringify(Object.fromEntries(res.headers));
      foreign.push(`${new Date().toISOString()} ${res.status} ${(input as Request).url ?? String(input)} headers ${headers} body ${JSON.stringify(body)}`);
      return res;
    };
    const pier: PierClient = createPierClient({ baseUrl: apiUrl, token, fetch: recording });
    const workspaces = await until(
      () => unwrap(pier.GET('/api/v1/workspaces', {})).catch(() => undefined),
      (w) => w !== undefined,
      180_000,
      2000,
    );
    const workspaceID = workspaces!.items.find((w) => w.name === 'default')!.id;
    const vpcs = await unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID } } }));
    const vpc = { workspaceID, vpcID: vpcs.items.find((v) => v.name === 'default')!.id };
    bench.madeVpcNamespaces.push(vpcNamespace(vpc.vpcID));
    for (const list of ['secrets', 'services', 'databases'] as const)
      await until(
        () => unwrap(pier.GET(`/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/${list}`, { params: { path: vpc } })).catch(() => undefined),
        (r) => r !== undefined,
        60_000,
        500,
      );

    // A service printing `tick N` every second, to follow and to shell into.
    const service = await unwrap(
      pier.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services', {
        params: { path: vpc },
        body: {
          name: 'ticker',
          image: TINY_HTTP,
          port: 8080,
          health_check_path: '/healthz',
          command: ['/bin/sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done & exec /bin/busybox httpd -f -p 8080 -h /www'],
        },
      }),
    );
    const servicePath = { ...vpc, serviceID: service.id };
    await until(
      () => unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}', { params: { path: servicePath } })),
      (s) => s.status === 'running',
      180_000,
      1000,
    );
    const restPath = `/api/v1/workspaces/${vpc.workspaceID}/vpcs/${vpc.vpcID}/services/${service.id}`;
    const stop = new AbortController();
    const follow = followTicks(apiUrl, token, restPath, stop.signal);
    const shell = keepShell(`ws://${gatewayIp}:7100${restPath}/exec?command=sh&tty=false&access_token=${token}`, stop.signal);

    // The load.
    let requests = 0;
    let inFlight = 0;
    const failures = new Map<string, number>();
    const secretsMade = new Set<string>();
    const keysMade = new Set<string>();
    let patching = false;
    let lastImage = TINY_HTTP;
    // What is going on, for the failures' record.
    let phase = 'start';
    const one = async (i: number) => {
      const slot = i % 20;
      if (slot < 8) return unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services', { params: { path: vpc } }));
      if (slot < 10) return unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}', { params: { path: servicePath } }));
      if (slot < 13) return unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', { params: { path: vpc } }));
      if (slot < 15) return unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID } } }));
      if (slot === 15 || slot === 16) {
        const name = `load-${i}`;
        await unwrap(pier.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', { params: { path: vpc }, body: { name, values: { N: String(i) } } }));
        return secretsMade.add(name);
      }
      if (slot === 17) {
        const name = `load-${i}`;
        await unwrap(pier.POST('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID } }, body: { name } }));
        return keysMade.add(name);
      }
      if (slot === 18 && !patching) {
        // One change at a time, so the last one acknowledged is what the service ends with.
        // `image` alone changes the record only (the repository a bare deploy tag goes on).
        patching = true;
        try {
          const image = `registry.example.com/load/ticker-${i}`;
          await unwrap(pier.PATCH('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}', { params: { path: servicePath }, body: { image } }));
          lastImage = image;
        } finally {
          patching = false;
        }
        return;
      }
      return unwrap(pier.GET('/api/v1/workspaces/{workspaceID}', { params: { path: { workspaceID } } }));
    };
    let i = 0;
    const load = setInterval(() => {
      if (inFlight > 300) return;
      inFlight++;
      requests++;
      one(i++)
        .catch((err: Error) => {
          const what = `${phase}: ${err.message}`;
          failures.set(what, (failures.get(what) ?? 0) + 1);
        })
        .finally(() => inFlight--);
    }, PACE_MS);

    // The leader of each background loop of `part` (kit's leases.ts: a `leader:<loop>`
    // lease, its holder `<service>@<hostname>:<pid>:…`, the hostname being the pod's name).
    const leaders = async (part: string) => {
      const rows = await tool('kubectl', [
        '-n',
        ns,
        'exec',
        `deploy/${RELEASE}-postgres`,
        '--',
        'psql',
        '-U',
        'postgres',
        '-d',
        'pier',
        '-Atc',
        `select name, split_part(split_part(holder, '@', 2), ':', 1) from ${part}.leases where name like 'leader:%' and expires_at > now()`,
      ]);
      return new Map(
        rows
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split('|') as [string, string]),
      );
    };
    const handovers: string[] = [];
    const handoverMs: number[] = [];
    const phases: string[] = [];
    const started = Date.now();
    const upgrade = async (what: string, set: string[]) => {
      phase = `roll ${what}`;
      const t = Date.now();
      await tool('helm', ['upgrade', RELEASE, CHART, '-n', ns, '-f', keysFile, '--reuse-values', ...set, '--wait', '--wait-for-jobs', '--timeout', '300s']);
      // --wait returns once the new pods are ready: the old ones are still draining.
      await until(
        () => k.list(`/api/v1/namespaces/${ns}/pods`, 'app.kubernetes.io/name=pier'),
        (pods) => pods.every((p) => !p.metadata.deletionTimestamp),
        120_000,
        1000,
      );
      phases.push(`${what} ${((Date.now() - t) / 1000).toFixed(0)} s`);
    };
    let ticksBefore = 0;
    // The figures after the rolls, before the pods were killed.
    const rolled = { requests: 0, failed: 0, shellRestarts: 0 };
    const progress: string[] = [];
    try {
      await sleep(5000);
      for (const part of PARTS) {
        await upgrade(part, ['--set', `${part}.podAnnotations.pier-test/roll=${part}`]);
        progress.push(`${part}: ${follow.ticks.length - ticksBefore} ticks, ${shell.answered()} echoes`);
        ticksBefore = follow.ticks.length;
      }
      await upgrade('all at once', ['--set', 'podAnnotations.pier-test/roll=all']);
      await sleep(5000);
      Object.assign(rolled, { requests, failed: [...failures.values()].reduce((a, b) => a + b, 0), shellRestarts: shell.restarts.length });
      // Then one pod of each service killed with no grace period, one after another: for
      // the services with background loops, the pod leading the reconciler, and the time
      // each loop it led took to be led by the other pod.
      for (const part of PARTS) {
        const pods = await k.list(`/api/v1/namespaces/${ns}/pods`, `app.kubernetes.io/component=${part}`);
        const led = LOOPS.has(part) ? await leaders(part) : new Map<string, string>();
        // (events has no reconciler: the pod storing the audit log, its consumer's leader.)
        const victim = led.get('leader:reconciler') ?? led.get('leader:consumer') ?? pods[0]!.metadata.name;
        phase = `kill ${part}`;
        const killed = Date.now();
        await tool('kubectl', ['-n', ns, 'delete', 'pod', victim, '--grace-period=0', '--force', '--wait=false']);
        // Each loop's new leader, timed from the kill: all of them read at once, every 250 ms.
        const orphans = new Set([...led].filter(([, pod]) => pod === victim).map(([name]) => name));
        while (orphans.size > 0) {
          expect(Date.now() - killed, `loops still led by the killed pod: ${[...orphans].join(', ')}`).toBeLessThan(60_000);
          const now = await leaders(part);
          for (const name of orphans) {
            const by = now.get(name);
            if (by === undefined || by === victim) continue;
            orphans.delete(name);
            handovers.push(`${part} ${name.slice('leader:'.length)} ${((Date.now() - killed) / 1000).toFixed(1)} s`);
            handoverMs.push(Date.now() - killed);
            // (The other pod, or the killed one's replacement if it came up first: either leads.)
          }
          await sleep(250);
        }
        await sleep(Math.max(0, 10_000 - (Date.now() - killed)));
      }
      await until(
        () => k.list(`/api/v1/namespaces/${ns}/pods`, 'app.kubernetes.io/name=pier'),
        // Two of each part, PostgreSQL and NATS.
        (pods) => pods.filter((p) => p.status.containerStatuses?.every((c: { ready: boolean }) => c.ready)).length === 2 * PARTS.length + 2,
        120_000,
        1000,
      );
    } finally {
      clearInterval(load);
    }
    await until(
      async () => inFlight,
      (n) => n === 0,
      120_000,
      200,
    );
    stop.abort();
    await Promise.all([follow.done, shell.done]);

    // Every acknowledged write is there exactly once.
    const allSecrets: { name: string }[] = [];
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets', { params: { path: vpc, query: { limit: 200, cursor } } }));
      allSecrets.push(...page.items);
      cursor = page.next_cursor ?? undefined;
    }
    const keys: { name: string }[] = [];
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/api-keys', { params: { path: { workspaceID }, query: { limit: 200, cursor } } }));
      keys.push(...page.items);
      cursor = page.next_cursor ?? undefined;
    }
    const count = (names: string[]) => names.reduce((m, n) => m.set(n, (m.get(n) ?? 0) + 1), new Map<string, number>());
    const secretCounts = count(allSecrets.map((s) => s.name));
    // The audit log, its service rolled and its consumer's leader killed like the others,
    // holds each secret's creation once: none lost, none stored twice.
    const audited = await until(
      async () => {
        const names: string[] = [];
        for (let cursor: string | undefined, first = true; first || cursor; first = false) {
          const page = await unwrap(
            pier.GET('/api/v1/workspaces/{workspaceID}/events', {
              params: { path: { workspaceID }, query: { type: 'secret.created', since: new Date(started - 60_000).toISOString(), limit: 200, cursor } },
            }),
          );
          names.push(...page.items.map((e) => e.resource.name ?? ''));
          cursor = page.next_cursor ?? undefined;
        }
        return count(names);
      },
      (c) => [...secretsMade].every((n) => c.has(n)),
      60_000,
      1000,
    );
    const unaudited = [...secretsMade].filter((n) => audited.get(n) !== 1);
    const keyCounts = count(keys.map((x) => x.name));
    const lost =
      [...secretsMade].filter((n) => secretCounts.get(n) !== 1).length +
      [...keysMade].filter((n) => keyCounts.get(n) !== 1).length +
      ((await unwrap(pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}', { params: { path: servicePath } }))).image === lastImage
        ? 0
        : 1);
    const failedCount = [...failures.values()].reduce((a, b) => a + b, 0);
    // Any failure, even one this test tolerates (a killed pod's), keeps the pods' logs.
    if (failedCount > 0) failed = true;
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `rolling upgrade: ${requests} requests, ${failedCount} failed, ${lost} writes lost (${(requests / seconds).toFixed(0)} requests/s over ${seconds.toFixed(0)} s; ` +
        `${secretsMade.size} secrets, ${keysMade.size} keys, image ${lastImage}; rolls: ${phases.join(', ')})`,
    );
    console.log(
      `rolling upgrade: log follow ${follow.ticks.length} ticks, ${follow.reconnects()} reconnects; shell ${shell.answered()} echoes, reopened ${shell.reopened()} times (close codes ${shell.restarts.join(',')}); ${progress.join('; ')}`,
    );
    console.log(
      `rolling upgrade: the rolls ${rolled.requests} requests, ${rolled.failed} failed; then one pod of each service killed: ${requests - rolled.requests} requests, ${failedCount - rolled.failed} failed (${JSON.stringify(Object.fromEntries(failures))})`,
    );
    console.log(`rolling upgrade: leaders killed, each loop led again after: ${handovers.join(', ')}`);
    console.log(
      `rolling upgrade: audit log: ${secretsMade.size} secrets created, ${unaudited.length} not there exactly once (${unaudited
        .slice(0, 3)
        .map((n) => `${n}: ${audited.get(n) ?? 0}`)
        .join(', ')})`,
    );
    if (foreign.length > 0) console.log(`rolling upgrade: answers not from Pier:\n${foreign.join('\n')}`);
    // Every loop the killed leader ran was taken over within a lease's lifetime (15 s) and a renewal's wait.
    expect(handoverMs.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...handoverMs)).toBeLessThan(LEASE_TTL_MS + 10_000);
    // Log collection (one leader) stored each line once, none skipped, through every roll and kill.
    const stored: number[] = [];
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await unwrap(
        pier.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/logs/history', {
          params: { path: servicePath, query: { start: new Date(started - 60_000).toISOString(), q: 'tick ', limit: 1000, cursor } },
        }),
      );
      stored.push(...page.items.map((l) => Number(/^tick (\d+)$/.exec(l.message.trim())?.[1])).filter((n) => !Number.isNaN(n)));
      cursor = page.next_cursor ?? undefined;
    }
    const sorted = [...stored].sort((a, b) => a - b);
    expect(sorted.length).toBeGreaterThan(60);
    expect(sorted).toEqual(Array.from({ length: sorted.length }, (_, n) => sorted[0]! + n));
    // No request failed while the services rolled; none lost nor doubled a write, killed pods included.
    expect(rolled.failed).toBe(0);
    expect(lost).toBe(0);
    expect(unaudited).toEqual([]);
    // The follow went on through every roll: each tick once, none missing between the first and the last.
    const ticks = follow.ticks;
    expect(ticks.length).toBeGreaterThan(30);
    expect(ticks).toEqual(Array.from({ length: ticks.length }, (_, n) => ticks[0]! + n));
    expect(follow.reconnects()).toBeGreaterThan(0);
    // The shell was told to reconnect (1012) and answered again after each time.
    // (A pod killed with no grace period cannot say so: its sockets just break, 1006.)
    expect(rolled.shellRestarts).toBeGreaterThan(0);
    expect(shell.restarts.slice(0, rolled.shellRestarts).every((c) => c === 1012)).toBe(true);
    expect(shell.answered()).toBeGreaterThan(30);
  }, 1_500_000);
});
