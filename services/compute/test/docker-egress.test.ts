// Tenants' containers kept off the host and off link-local addresses on the docker adapter
// (the host firewall of cluster/docker-egress-firewall.ts, and the replicas' own privileges).
// From inside a replica (a shell through compute's exec) and from a build's RUN step, two
// listeners must be out of reach: one the test binds on the host's address on the VPC's
// bridge (its gateway), which the host reaches through INPUT; and a stand-in for a cloud's
// metadata server at 169.254.169.254, in a network namespace of its own that the host routes
// to as a cloud host does, reached through FORWARD. Other containers of the VPC stay in reach.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { IDENTITY_HEADER, vpcNetwork } from '@pier/kit';
import { openShell, shellUrl, testLabels } from '@pier/testing';
import { startCompute, until, cleanDocker, docker, TINY_HTTP, type Compute } from './support.ts';
import { archive, removeBuiltImages, upload, waitForBuild } from './build-support.ts';
import { FIREWALL_CONTAINER } from '../src/cluster/docker-egress-firewall.ts';
import { framesText } from '../src/cluster/log-lines.ts';

const NETFILTER = 'pier/netfilter:1';
const METADATA = '169.254.169.254';
const METADATA_PORT = 8080;

let c: Compute;
let web: { id: string; name: string };
let gateway: string;
let hostServer: http.Server;
let hostPort: number;
let metadata: { stop(): Promise<void> } | undefined;
const built: string[] = [];

/** Runs `script` (bash) in a container of pier/netfilter with the host's network and process ids, and what `ip` and nsenter need: test plumbing only. */
async function onHost(script: string): Promise<string> {
  const ct = await docker.createContainer({
    Image: NETFILTER,
    Entrypoint: ['bash', '-euc', script],
    Labels: testLabels(),
    HostConfig: { NetworkMode: 'host', PidMode: 'host', CapAdd: ['NET_ADMIN', 'SYS_ADMIN', 'SYS_PTRACE'] },
  });
  try {
    await ct.start();
    const { StatusCode } = (await ct.wait()) as { StatusCode: number };
    const logs = framesText(await ct.logs({ stdout: true, stderr: true }));
    if (StatusCode !== 0) throw new Error(`host script failed (${StatusCode}): ${logs}`);
    return logs;
  } finally {
    await ct.remove({ force: true }).catch(() => undefined);
  }
}

/**
 * tiny-http serving on 169.254.169.254:8080 in a namespace of its own, joined to the host by a
 * veth pair; the host routes 169.254.169.254/32 there, as a cloud host routes its metadata
 * address out of its own interface (and as the host has it, the address is not the host's own).
 */
async function startMetadataStandIn(): Promise<{ stop(): Promise<void> }> {
  const ct = await docker.createContainer({ Image: TINY_HTTP, Env: [`PORT=${METADATA_PORT}`], Labels: testLabels(), HostConfig: { NetworkMode: 'none' } });
  await ct.start();
  const pid = (await ct.inspect()).State.Pid;
  const tag = randomBytes(3).toString('hex');
  const [outside, inside] = [`pmh${tag}`, `pmc${tag}`];
  const stop = async () => {
    await onHost(`ip link del ${outside} 2>/dev/null || true`).catch(() => undefined);
    await ct.remove({ force: true }).catch(() => undefined);
  };
  try {
    await onHost(`
      ip link add ${outside} type veth peer name ${inside}
      ip link set ${inside} netns ${pid}
      ip addr add 169.254.169.1/32 dev ${outside}
      ip link set ${outside} up
      # While the test runs the host's own way to the address goes there too; the route leaves with the link.
      ip route replace ${METADATA}/32 dev ${outside}
      nsenter -t ${pid} -n sh -c 'ip addr add ${METADATA}/32 dev ${inside} && ip link set ${inside} up && ip route add 169.254.169.1/32 dev ${inside} && ip route add default via 169.254.169.1 dev ${inside}'
    `);
    // The host itself reaches it: the stand-in is up and routed.
    await until(
      () =>
        fetch(`http://${METADATA}:${METADATA_PORT}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status,
          () => 0,
        ),
      (s) => s === 200,
      10_000,
    );
    return { stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Runs a command in the service's replica 0 through compute's exec; its output. */
async function inReplica(command: string): Promise<string> {
  const url = shellUrl(`${c.url.replace(/^http/, 'ws')}${c.base}/${web.id}/exec`, { command: ['/bin/sh', '-c', command], tty: 'false', replica: '0' });
  const s = await openShell(url, { [IDENTITY_HEADER]: await c.token('owner') });
  await s.closed;
  return s.output();
}

/**
 * One shell line printing `<label> REACHED` when an HTTP request to host:port gets an answer,
 * `<label> BLOCKED <why>` otherwise (busybox nc, 5 s at most; its wget crashes in this image).
 */
const probe = (label: string, host: string, port: number | string) =>
  `out=$(printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${host} ${port} 2>&1); case "$out" in *HTTP/*) echo "${label} REACHED";; *) echo "${label} BLOCKED $(echo $out | head -c 120)";; esac`;

/** `<label> REACHED` or `<label> BLOCKED`, as the probe printed it in `output` (`<label> missing` without its line). */
const outcome = (output: string, label: string) => {
  const line = output.split('\n').find((l) => l.startsWith(`${label} `));
  return line ? line.split(' ').slice(0, 2).join(' ') : `${label} missing`;
};

beforeAll(async () => {
  metadata = await startMetadataStandIn();
  c = await startCompute();
  // Two replicas: the first probes, the second is the VPC peer that must stay in reach.
  web = (await c.post(c.base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz', min_replicas: 2 })).body;
  await until(
    () => c.get(`${c.base}/${web.id}`).then((r) => r.body.status),
    (s) => s === 'running',
    90_000,
  );
  const net = await docker.getNetwork(vpcNetwork(c.vpcId)).inspect();
  gateway = net.IPAM!.Config![0]!.Gateway!;
  // Anything the host binds on its address on the VPC's bridge: here, a plain HTTP server.
  hostServer = http.createServer((_req, res) => res.end('host-listener'));
  await new Promise<void>((resolve) => hostServer.listen(0, gateway, resolve));
  hostPort = (hostServer.address() as AddressInfo).port;
}, 180_000);

afterAll(async () => {
  hostServer?.close();
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
  await metadata?.stop();
  await removeBuiltImages(...built);
}, 90_000);

describe('egress of a replica', () => {
  it('reaches neither the host on its VPC gateway address nor 169.254.169.254, but still the services of its VPC', async () => {
    // The host sees its own listener, and the VPC's other containers are reachable: the probes work.
    expect(await (await fetch(`http://${gateway}:${hostPort}/`)).text()).toBe('host-listener');
    // Replica 1, reached from replica 0 across the VPC's bridge.
    const [other] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${web.id}`, 'pier.role=replica', 'pier.replica=1'] }) });
    const peer = other!.NetworkSettings.Networks[vpcNetwork(c.vpcId)]!.IPAddress;
    const out = await inReplica([probe('host', gateway, hostPort), probe('metadata', METADATA, METADATA_PORT), probe('peer', peer, 8080)].join('; '));
    expect(
      ['host', 'metadata', 'peer'].map((l) => outcome(out, l)),
      out,
    ).toEqual(['host BLOCKED', 'metadata BLOCKED', 'peer REACHED']);
  });

  it('runs with every capability dropped and no-new-privileges', async () => {
    const [ct] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${web.id}`, 'pier.role=replica', 'pier.replica=0'] }) });
    const info = await docker.getContainer(ct!.Id).inspect();
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    const status = await inReplica('grep -E "^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status');
    expect(status).toMatch(/CapPrm:\s+0000000000000000/);
    expect(status).toMatch(/CapEff:\s+0000000000000000/);
    expect(status).toMatch(/CapBnd:\s+0000000000000000/);
    expect(status).toMatch(/NoNewPrivs:\s+1/);
  });

  it('gives a cron service the same: its runs are copies of a template container made like a replica', async () => {
    const cron = (await c.post(c.base, { name: 'nightly', service_type: 'cron', cron_schedule: '0 3 * * *', image: TINY_HTTP })).body;
    const [template] = await until(
      () => docker.listContainers({ all: true, filters: JSON.stringify({ label: [`pier.service=${cron.id}`, 'pier.role=template'] }) }),
      (list) => list.length === 1,
    );
    const info = await docker.getContainer(template!.Id).inspect();
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
  });

  it('runs as uid 0 when asked (the contract allows any UID), as a root holding no capability', async () => {
    const root = (await c.post(c.base, { name: 'as-root', image: TINY_HTTP, run_as_user: 0, health_check_path: '/healthz' })).body;
    await until(
      () => c.get(`${c.base}/${root.id}`).then((r) => r.body.status),
      (st) => st === 'running',
      90_000,
    );
    const [ct] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${root.id}`, 'pier.role=replica'] }) });
    const exec = await docker.getContainer(ct!.Id).exec({
      Cmd: ['/bin/sh', '-c', 'id -u; grep -E "^(CapEff|NoNewPrivs):" /proc/self/status; chown 1:1 /www 2>&1 || echo chown-refused'],
      AttachStdout: true,
      AttachStderr: true,
    });
    const out = await new Promise<string>((resolve, reject) => {
      void exec.start({}).then((stream) => {
        const chunks: Buffer[] = [];
        stream.on('data', (d: Buffer) => chunks.push(d));
        stream.on('end', () => resolve(framesText(Buffer.concat(chunks))));
        stream.on('error', reject);
      }, reject);
    });
    expect(out).toMatch(/^0$/m);
    expect(out).toMatch(/CapEff:\s+0000000000000000/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
    expect(out).toContain('chown-refused');
  });

  it('still listens on a port under 1024 as its own user, without a capability', async () => {
    const svc = (await c.post(c.base, { name: 'low-port', port: 80, health_check_path: '/healthz', run_as_user: 4321 })).body;
    // tiny-http listens on $PORT.
    const put = await c.request('PUT', `${c.base}/${svc.id}/env`, { variables: [{ key: 'PORT', value: '80' }] });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const deployed = await c.post(`${c.base}/${svc.id}/deploy`, { image_tag: TINY_HTTP });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    const settled = await until(
      () => c.get(`${c.base}/${svc.id}`).then((r) => r.body),
      (s) => s.status === 'running' || s.status === 'crashed',
      90_000,
    );
    expect(settled.status, settled.status_message).toBe('running');
  });
});

describe('egress of a build step', () => {
  it('reaches neither the host nor 169.254.169.254 from a RUN step', async () => {
    // The build network's gateway is the step's default route; the listener here takes every address.
    const anyAddress = http.createServer((_req, res) => res.end('host-listener'));
    await new Promise<void>((resolve) => anyAddress.listen(0, '0.0.0.0', resolve));
    const port = (anyAddress.address() as AddressInfo).port;
    try {
      const svc = (await c.post(c.base, { name: `build-${randomUUID().slice(0, 8)}`, image: TINY_HTTP })).body;
      built.push(svc.id);
      const marker = randomUUID();
      const run = [
        `echo ${marker}`,
        'gw=$(ip route | awk "/^default/ {print \\$3}")',
        probe('host', '$gw', port),
        probe('metadata', METADATA, METADATA_PORT),
      ].join('; ');
      const body = await archive([{ name: 'Dockerfile', content: `FROM ${TINY_HTTP}\nRUN ${run}\n` }]);
      const res = await upload(c, svc.id, body, { query: 'deploy=false' });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const b = await waitForBuild(c, svc.id, res.body.id);
      expect(b.status, b.error).toBe('succeeded');
      const log = String((await c.get(`${c.base}/${svc.id}/builds/${b.id}/logs`)).body.log);
      expect(
        ['host', 'metadata'].map((l) => outcome(log, l)),
        log,
      ).toEqual(['host BLOCKED', 'metadata BLOCKED']);
    } finally {
      anyAddress.close();
    }
  });
});

describe('the host firewall', () => {
  /** `pier-egress-firewall show` on the host: the backend's name, then Pier's chains and the jumps to them. */
  const show = () => onHost('pier-egress-firewall show 2>/dev/null');

  it('runs in one container with nothing but NET_ADMIN and NET_RAW, and keeps one set of rules across compute restarts', async () => {
    const info = await docker.getContainer(FIREWALL_CONTAINER).inspect();
    expect(info.HostConfig).toMatchObject({ NetworkMode: 'host', CapDrop: ['ALL'], CapAdd: ['NET_ADMIN', 'NET_RAW'], SecurityOpt: ['no-new-privileges'] });
    expect(info.HostConfig.Privileged).toBe(false);
    await c.restart();
    // A restarted compute looks at the firewall again before its next VPC work.
    const other = (await c.post(c.base, { name: 'after-restart', image: TINY_HTTP })).body;
    await until(
      () => c.get(`${c.base}/${other.id}`).then((r) => r.body.status),
      (s) => s === 'running',
      90_000,
    );
    expect((await docker.listContainers({ all: true, filters: JSON.stringify({ name: [FIREWALL_CONTAINER] }) })).length).toBe(1);
    const rules = await show();
    expect(rules.split('\n').filter((l) => l.trim() === '-A DOCKER-USER -j PIER-EGRESS')).toHaveLength(1);
    expect(rules.split('\n').filter((l) => l.trim() === '-A INPUT -j PIER-HOST')).toHaveLength(1);
    expect(rules).toContain('-A PIER-EGRESS -d 169.254.0.0/16 -i pvpc+ -j REJECT');
    expect(rules).toContain('-A PIER-HOST -i pvpc+ -j REJECT');
  });

  it('puts the rules back within seconds when someone flushes them', async () => {
    await onHost('b=$(pier-egress-firewall show 2>/dev/null | sed -n "s/^backend //p"); "iptables-$b" -w 10 -F PIER-HOST');
    const rules = await until(show, (r) => r.includes('-A PIER-HOST -i pvpc+ -j REJECT'), 15_000, 250);
    expect(rules).toContain('-A PIER-HOST -i pvpc+ -j REJECT');
    const out = await inReplica(probe('host', gateway, hostPort));
    expect(outcome(out, 'host'), out).toBe('host BLOCKED');
  });
});
