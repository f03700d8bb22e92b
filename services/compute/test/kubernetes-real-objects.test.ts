// The rest of what compute writes to Kubernetes, on a REAL API server (deploy/kube/cluster.sh)
// with every write passed through `fieldValidation=Strict` (an unknown field is refused,
// never pruned): the edge's Ingress and cert-manager Certificate through the real edge
// adapter, a disk backup's VolumeSnapshot and its restored claim, and a build's namespace,
// NetworkPolicy and Job. cert-manager, a snapshot controller, a storage provisioner and
// BuildKit do not run here, so what they would do (a certificate issued, a snapshot ready,
// a claim bound, an image built) stays simulated in the fake-based suites
// (kubernetes-edge.test.ts, disk-backups-kubernetes.test.ts, kubernetes-builds.test.ts);
// this suite proves the API server takes every object as compute sends it.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createLogger, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { notStoredAsSent, realKubernetes, type RealKubernetes, type StrictWrites } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesEdge } from '../src/cluster/kubernetes-edge.ts';
import { certificateManifest, certificateName, ingressManifest } from '../src/cluster/kubernetes-edge-manifests.ts';
import { restoredClaimManifest, volumeSnapshotManifest } from '../src/cluster/kubernetes-snapshot-manifests.ts';
import { buildJobManifest, buildNamespaceManifest, buildNetworkPolicyManifest } from '../src/cluster/kubernetes-build-manifests.ts';
import type { Manifest } from '../src/cluster/kubernetes-manifests.ts';
import type { EdgeRoute } from '../src/domain/edge/edge-port.ts';
import { TINY_HTTP } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const CRDS = [
  'cert-manager-v1.21.2/cert-manager.io_certificates.yaml',
  'external-snapshotter-v8.7.0/snapshot.storage.k8s.io_volumesnapshots.yaml',
  'external-snapshotter-v8.7.0/snapshot.storage.k8s.io_volumesnapshotclasses.yaml',
  'external-snapshotter-v8.7.0/snapshot.storage.k8s.io_volumesnapshotcontents.yaml',
];

const log = createLogger('test', 'warn');
let k: RealKubernetes;
let strict: StrictWrites;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const ns = vpcNamespace(vpcId);
const buildNs = `pier-builds-test-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  k = realKubernetes();
  await k.installCrds(CRDS);
  strict = await k.strictWrites();
  await KubernetesCluster.fromKubeconfig(strict.kubeconfig, log).ensureVpc({ workspaceId, vpcId });
}, 60_000);

afterAll(async () => {
  await strict?.stop();
  if (k) for (const n of [ns, buildNs]) await k.deleteNamespace(n);
});

/** Where the API keeps an object of this manifest. */
function pathOf(m: Manifest, plural: string): string {
  const group = m.apiVersion.includes('/') ? `/apis/${m.apiVersion}` : `/api/${m.apiVersion}`;
  return m.metadata.namespace ? `${group}/namespaces/${m.metadata.namespace}/${plural}/${m.metadata.name}` : `${group}/${plural}/${m.metadata.name}`;
}

/** Server-side apply with Strict field validation, as compute's adapters apply; the stored object. */
async function applyStrictly(m: Manifest, plural: string, dryRun = false): Promise<Record<string, any>> {
  const query = `fieldManager=pier-compute&force=true&fieldValidation=Strict${dryRun ? '&dryRun=All' : ''}`;
  const res = await k.request('PATCH', `${pathOf(m, plural)}?${query}`, JSON.stringify(m), 'application/apply-patch+yaml');
  expect(res.status, `${m.kind}/${m.metadata.name}: ${res.body?.message ?? ''}`).toBeLessThan(300);
  // Nothing deprecated either: the API server warns of it on every write.
  expect(res.warnings, `${m.kind}/${m.metadata.name}`).toEqual([]);
  return res.body;
}

describe('the edge on a real API server', () => {
  const route: EdgeRoute = {
    workspaceId,
    vpcId,
    serviceId: randomUUID(),
    serviceName: 'web',
    port: 8080,
    serviceHost: 'web-1.apps.example.com',
    customHosts: ['www.example.com'],
    tlsHosts: ['www.example.com'],
    activator: null,
  };
  const settings = { clusterIssuer: 'pier-acme', ingressClass: 'nginx', appsTlsSecret: 'apps-wildcard', addresses: ['203.0.113.10'] };

  it('applies the Ingress and the Certificate as built, and removes both', async () => {
    const edge = new KubernetesEdge(kubeConfigFrom(strict.kubeconfig), settings, log);
    await edge.sync([route]);
    const ingress = ingressManifest(route, settings);
    const storedIngress = await k.get(pathOf(ingress, 'ingresses'));
    expect(notStoredAsSent(ingress.spec, storedIngress.spec)).toEqual([]);

    // No cert-manager here: the Certificate is stored and stays unissued.
    expect(await edge.certify(route, 'www.example.com')).toMatchObject({ status: 'pending' });
    const certificate = certificateManifest(route, 'www.example.com', settings);
    const storedCertificate = await k.get(pathOf(certificate, 'certificates'));
    expect(storedCertificate.metadata.name).toBe(certificateName('www.example.com'));
    expect(notStoredAsSent(certificate.spec, storedCertificate.spec)).toEqual([]);

    await edge.removeCertificate(route, 'www.example.com');
    await edge.sync([]);
    expect((await k.request('GET', pathOf(certificate, 'certificates'))).status).toBe(404);
    expect((await k.request('GET', pathOf(ingress, 'ingresses'))).status).toBe(404);
    // Every write went through Strict validation, and none was refused.
    expect(strict.writes.filter((w) => w.status >= 300)).toEqual([]);
  });
});

describe('disk backups on a real API server', () => {
  it('takes the VolumeSnapshot of a disk and the claim restored from it, as built', async () => {
    const spec = workloadSpec({ workspaceId, vpcId }, { name: 'db', service_type: 'worker', disk_size_gb: 1, disk_mount_path: '/data' }, [], TINY_HTTP);
    const backupId = randomUUID();
    const snapshot = volumeSnapshotManifest({ ...spec, volume: null }, backupId, 'csi-snapclass');
    expect(notStoredAsSent(snapshot.spec, (await applyStrictly(snapshot, 'volumesnapshots')).spec)).toEqual([]);
    const claim = restoredClaimManifest(spec, 'db-disk-restored', backupId);
    expect(notStoredAsSent(claim.spec, (await applyStrictly(claim, 'persistentvolumeclaims')).spec)).toEqual([]);
  });
});

describe('builds on a real API server', () => {
  it("takes the build namespace, its NetworkPolicy and a build's Job, as built", async () => {
    const options = {
      namespace: buildNs,
      buildkitImage: 'moby/buildkit:rootless',
      pushImage: 'pier/image-push:1',
      pushSecret: 'registry-push',
      timeoutSeconds: 900,
      memoryMiB: 2048,
    };
    for (const [m, plural] of [
      [buildNamespaceManifest(buildNs), 'namespaces'],
      [buildNetworkPolicyManifest(buildNs), 'networkpolicies'],
    ] as const) {
      expect(notStoredAsSent(m.spec ?? {}, (await applyStrictly(m, plural)).spec ?? {})).toEqual([]);
    }
    const target = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId, vpcId };
    const job = buildJobManifest(target, 'registry.example/web:1', 'Dockerfile', options);
    // A dry run: no BuildKit image here, and the Job is what is being checked — its build init
    // container and its push container (termination message, read-only root) as sent.
    const stored = await applyStrictly(job, 'jobs', true);
    expect(notStoredAsSent(job.spec, stored.spec)).toEqual([]);
    expect(stored.spec.template.spec.initContainers.map((c: { name: string }) => c.name)).toEqual(['build']);
    expect(stored.spec.template.spec.containers[0]).toMatchObject({ name: 'push', terminationMessagePolicy: 'FallbackToLogsOnError' });
  });
});
