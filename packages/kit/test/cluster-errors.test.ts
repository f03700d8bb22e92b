// How kit reads a failed cluster call, from errors the real clients throw: dockerode against
// the local engine (statusCode, json.message; socket errors with their code), and
// @kubernetes/client-node's own ApiException.
import net from 'node:net';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { dockerFault, isDockerNotFound, isKubernetesNotFound, kubernetesFault, pgErrorOf, unreachableCode } from '../src/index.ts';
import { kubeletCatchingUp, kubernetesApiConfiguration } from '../src/kubernetes.ts';

const docker = new Docker();
const created: { network: string[]; container: string[] } = { network: [], container: [] };
afterAll(async () => {
  for (const id of created.container)
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
  for (const id of created.network)
    await docker
      .getNetwork(id)
      .remove()
      .catch(() => undefined);
});

/** What a call to the engine threw (what it returned, when it threw nothing: the assertions then fail). */
const thrown = (call: Promise<unknown>): Promise<unknown> => call.catch((err: unknown) => err);

const name = (what: string) => `pier-test-${what}-${process.pid}`;

describe('dockerFault', () => {
  it('reads a missing object (404) as a refusal, and isDockerNotFound says so', async () => {
    const err = await thrown(docker.getNetwork(name('missing')).inspect());
    expect(isDockerNotFound(err)).toBe(true);
    expect(dockerFault(err)).toEqual({ kind: 'refused', status: 404, reason: `network ${name('missing')} not found` });
  });

  it('reads a name already taken (409) as a refusal, not a missing object', async () => {
    const network = await docker.createNetwork({ Name: name('taken'), CheckDuplicate: true });
    created.network.push(network.id);
    const err = await thrown(docker.createNetwork({ Name: name('taken'), CheckDuplicate: true }));
    expect(isDockerNotFound(err)).toBe(false);
    expect(dockerFault(err)).toMatchObject({ kind: 'refused', status: 409 });
  });

  it('reads an engine out of address pools (its 404 on a network create) as exhausted, naming the cause', async () => {
    // Without default IPv6 pools the engine answers an IPv6 network without a subnet exactly
    // as any network create once its IPv4 pools are used up.
    const err = await thrown(docker.createNetwork({ Name: name('pools'), EnableIPv6: true }));
    const id = (err as { id?: unknown }).id;
    if (typeof id === 'string') created.network.push(id); // an engine with IPv6 pools made it
    expect(dockerFault(err)).toEqual({
      kind: 'exhausted',
      status: 404,
      reason: 'could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network',
    });
  });

  it("reads the engine's own failure (500) as failed", async () => {
    // A port binding on a port a process of the host holds: the engine fails the start with a
    // 500 ("driver failed programming external connectivity ... address already in use").
    const holder = net.createServer().listen(0, '0.0.0.0');
    await once(holder, 'listening');
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const image = (await docker.listImages()).flatMap((i) => i.RepoTags ?? []).find((t) => t !== '<none>:<none>');
      expect(image).toBeTruthy();
      const c = await docker.createContainer({
        name: name('port'),
        Image: image!,
        Entrypoint: [],
        Cmd: ['true'],
        ExposedPorts: { '80/tcp': {} },
        HostConfig: { PortBindings: { '80/tcp': [{ HostIp: '0.0.0.0', HostPort: String(port) }] } },
      });
      created.container.push(c.id);
      const err = await thrown(c.start());
      expect(dockerFault(err)).toMatchObject({ kind: 'failed', status: 500, reason: expect.stringContaining('address already in use') });
    } finally {
      holder.close();
    }
  });

  it('reads an engine socket that is not there as unreachable, and a file error as nothing of the sort', async () => {
    const err = await thrown(new Docker({ socketPath: `/nonexistent/pier-${process.pid}.sock` }).ping());
    expect(dockerFault(err)).toEqual({ kind: 'unreachable', code: 'ENOENT', detail: 'ENOENT' });
    const fileErr = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT', syscall: 'open' });
    expect(unreachableCode(fileErr)).toBeUndefined();
    expect(pgErrorOf(fileErr)).toBeUndefined();
  });

  it('reads a refused TCP connection the same way for the engine and for PostgreSQL', async () => {
    const err = await thrown(new Docker({ host: '127.0.0.1', port: 1, protocol: 'http' }).ping());
    expect(dockerFault(err)).toMatchObject({ kind: 'unreachable', code: 'ECONNREFUSED' });
    expect(pgErrorOf(err)).toMatchObject({ kind: 'unavailable' });
  });
});

describe('kubernetesFault', () => {
  const status = (code: number, message: string) => new ApiException(code, `HTTP-Code: ${code}`, { kind: 'Status', message }, {});

  it('reads a 404 as not found and a refusal', () => {
    const err = status(404, 'secrets "x" not found');
    expect(isKubernetesNotFound(err)).toBe(true);
    expect(kubernetesFault(err)).toEqual({ kind: 'refused', status: 404, reason: 'secrets "x" not found' });
  });

  it("reads a 5xx and a 429 as the API server failing, a refused apply's 500 as a refusal", () => {
    expect(kubernetesFault(status(503, 'etcd is down'))).toMatchObject({ kind: 'failed', status: 503 });
    expect(kubernetesFault(status(429, 'slow down'))).toMatchObject({ kind: 'failed', status: 429 });
    const apply = status(500, 'failed to create typed patch object (/x): .spec.bogus: field not declared in schema');
    expect(kubernetesFault(apply)).toMatchObject({ kind: 'refused', status: 500 });
    expect(isKubernetesNotFound(apply)).toBe(false);
  });

  it("reads fetch's own failure on a refused connection as unreachable", async () => {
    const err = await fetch('http://127.0.0.1:1/').catch((e: unknown) => e);
    expect(kubernetesFault(err)).toMatchObject({ kind: 'unreachable' });
  });

  it('names the request deadline passing, not "The user aborted a request."', async () => {
    // An API server that takes the connection and never answers.
    const server = net.createServer(() => undefined).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const kc = new KubeConfig();
      const { port } = server.address() as net.AddressInfo;
      kc.loadFromOptions({
        clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: 'u' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      const err = await thrown(new CoreV1Api(kubernetesApiConfiguration(kc, 200)).listNamespace());
      expect(kubernetesFault(err)).toEqual({ kind: 'unreachable', code: 'timeout', detail: 'no answer before the request deadline' });
    } finally {
      server.close();
    }
  });
});

describe('kubeletCatchingUp', () => {
  it('tells a kubelet still syncing its Secret cache (it retries) from a Secret that does not exist', () => {
    expect(kubeletCatchingUp('failed to sync secret cache: timed out waiting for the condition')).toBe(true);
    expect(kubeletCatchingUp('failed to sync configmap cache: timed out waiting for the condition')).toBe(true);
    expect(kubeletCatchingUp('secret "pier-secret-x" not found')).toBe(false);
    expect(kubeletCatchingUp(undefined)).toBe(false);
  });
});
