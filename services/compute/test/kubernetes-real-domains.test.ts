// Custom domains on the REAL single-node Kubernetes (deploy/kube/cluster.sh): verified against
// the cluster's DNS server (BIND), certified by the cluster's cert-manager through its
// ClusterIssuer `pier-acme` (Pebble validating HTTP-01 against the solver pod cert-manager
// starts behind Traefik), and served by Traefik with that certificate to a client that
// trusts only Pebble's root. Detaching removes the routing and the certificate.
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vpcNamespace } from '@pier/kit';
import { realKubernetes, type AcmeTestServer, type AuthoritativeDns, type RealKubernetes } from '@pier/testing';
import { onRealCluster, startCompute, until, TINY_HTTP, type Compute } from './support.ts';

let k: RealKubernetes;
let c: Compute;
let ns: string;
let dns: AuthoritativeDns;
let acme: AcmeTestServer;
const hostname = `www-${randomUUID().slice(0, 8)}.example.test`;

/** A client's GET over HTTPS through the ingress controller that trusts `ca` alone, and the issuer of what it was served. */
function viaIngressTrusting(ca: string): Promise<{ status: number; body: string; issuer: string }> {
  const ingress = k.ingressAddress();
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: ingress.host, port: ingress.port, servername: hostname, ca, path: '/', headers: { host: hostname }, timeout: 10_000, agent: false },
      (res) => {
        const cn = (res.socket as TLSSocket).getPeerCertificate().issuer?.CN ?? '';
        const issuer = Array.isArray(cn) ? cn.join(' ') : cn;
        let body = '';
        res.on('data', (b: Buffer) => (body += b.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, issuer }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  ({ dns, acme } = await k.certificates());
  c = await startCompute({
    ...onRealCluster(k),
    // As `cluster.sh env` prints them.
    PIER_DNS_RESOLVERS: dns.address,
    PIER_EDGE_CLUSTER_ISSUER: 'pier-acme',
  });
  ns = vpcNamespace(c.vpcId);
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
  await dns?.set(hostname, 'A', []).catch(() => undefined);
});

describe('a custom domain on a real cluster: DNS, cert-manager and the ingress controller', () => {
  it('is verified, certified through ACME by cert-manager, served with that certificate, and detached', async () => {
    const web = await c.post(c.base, { name: 'site', image: TINY_HTTP, port: 8080 });
    expect(web.status, JSON.stringify(web.body)).toBe(201);
    await until(
      () => k.viaIngress(new URL(web.body.url).hostname).catch((err: Error) => ({ status: 0, body: err.message })),
      (r) => r.status === 200,
      120_000,
      250,
    );
    const added = await c.post(`${c.base}/${web.body.id}/domains`, { hostname });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const domains = `${c.base}/${web.body.id}/domains`;

    // DNS is not there yet: the answer says what it should hold.
    let r = await c.post(`${domains}/${added.body.id}/verify`);
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toContain(`found no TXT record`);

    await dns.set(`_pier-challenge.${hostname}`, 'TXT', [added.body.verification.value]);
    await dns.set(hostname, 'A', [k.ingressAddress().host]);
    const t = Date.now();
    r = await c.post(`${domains}/${added.body.id}/verify`);
    expect(r.status).toBe(200);
    expect(['verified', 'active']).toContain(r.body.status);
    const certificates = await k.list(`/apis/cert-manager.io/v1/namespaces/${ns}/certificates`);
    expect(certificates.map((i) => i.spec.dnsNames)).toContainEqual([hostname]);

    // cert-manager orders it from Pebble; compute's edge worker sees it Ready.
    const active = await until(
      () => c.get(domains).then((l) => l.body.items.find((d: any) => d.id === added.body.id)),
      (d) => d.status === 'active' || d.status === 'failed',
      120_000,
      500,
    );
    expect(active, JSON.stringify(active)).toMatchObject({ status: 'active', error: null, tls: { status: 'issued', error: null, issuer: 'pier-acme' } });
    expect(new Date(active.tls.expires_at).getTime()).toBeGreaterThan(Date.now());
    console.log(`custom domain verified → certificate issued: ${Date.now() - t} ms`);

    // Served by Traefik with it: the chain checks out against Pebble's root alone.
    const root = await acme.issuingRootPem();
    const served = await until(
      () => viaIngressTrusting(root).catch((err: Error) => ({ status: 0, body: err.message, issuer: '' })),
      (s) => s.status === 200,
      30_000,
      250,
    );
    expect(served.body).toContain('hello from pier/tiny-http');
    expect(served.issuer).toMatch(/Pebble/);
    expect((await k.list(`/api/v1/namespaces/${ns}/secrets`)).filter((s) => s.type === 'kubernetes.io/tls')).toHaveLength(1);
    console.log(`custom domain verified → served over HTTPS with its certificate: ${Date.now() - t} ms`);

    // Detached: the Certificate and its Secret go, the host is routed nowhere.
    expect((await c.request('DELETE', `${domains}/${added.body.id}`)).status).toBe(204);
    expect((await k.get(`/apis/cert-manager.io/v1/namespaces/${ns}/certificates`)).items).toEqual([]);
    expect((await k.list(`/api/v1/namespaces/${ns}/secrets`)).filter((s) => s.type === 'kubernetes.io/tls')).toEqual([]);
    await until(
      () => k.viaIngress(hostname),
      (s) => s.status === 404,
      30_000,
      250,
    );
  }, 300_000);
});
