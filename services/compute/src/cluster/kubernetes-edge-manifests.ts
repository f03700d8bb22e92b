// The Kubernetes objects of the edge: an Ingress per web service (its own host and its
// custom domains), a cert-manager Certificate per custom domain and, in a VPC's namespace
// with elastic web services, the Service their Ingresses point at instead of their own: its
// EndpointSlice is compute's activator (edge/activator.ts), which holds a request while the
// service wakes and counts the requests it autoscales on. Pure functions: the adapter sends them, the tests validate them against
// the schemas and the CRDs.
import { createHash } from 'node:crypto';
import { vpcNamespace } from '@pier/kit';
import type { EdgeRoute } from '../domain/edge/edge-port.ts';
import { K8S_LABEL, MANAGED_BY, serviceLabels, type Manifest } from './kubernetes-manifests.ts';

export interface IngressSettings {
  /** The IngressClass (the cluster's default when unset). */
  ingressClass?: string;
  /** A TLS Secret for *.<apps domain> in each VPC namespace. */
  appsTlsSecret?: string;
  /** The cert-manager ClusterIssuer of custom domains. */
  clusterIssuer: string;
}

/** A DNS label for objects named after a hostname: readable head, hash for uniqueness. */
function hostLabel(hostname: string): string {
  const hash = createHash('sha256').update(hostname).digest('hex').slice(0, 10);
  const head = hostname
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${head}-${hash}`;
}

export function certificateName(hostname: string): string {
  return `tls-${hostLabel(hostname)}`;
}

/** The Secret cert-manager writes the certificate into (the Ingress serves it). */
export function tlsSecretName(hostname: string): string {
  return `tls-${hostLabel(hostname)}`;
}

/** The service's labels, as its workload's, with a kind of their own (pods are selected by kind `service`). */
function labels(r: EdgeRoute): Record<string, string> {
  return { ...serviceLabels(r), [K8S_LABEL.kind]: 'edge' };
}

/** Where compute's activator is reached from the ingress controller. */
export interface ActivatorEndpoint {
  addresses: string[];
  port: number;
}

/** The activator's Service in each VPC namespace that has an elastic web service (its name starts with `pier-`, which no service may). */
export const ACTIVATOR_SERVICE = 'pier-activator';
const ACTIVATOR_SERVICE_PORT = 80;

function activatorLabels(): Record<string, string> {
  return { [K8S_LABEL.managedBy]: MANAGED_BY, [K8S_LABEL.kind]: 'edge' };
}

/** A Service without a selector: its endpoints are the EndpointSlice below, which compute writes. */
export function activatorServiceManifest(vpcId: string, a: ActivatorEndpoint): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: ACTIVATOR_SERVICE, namespace: vpcNamespace(vpcId), labels: activatorLabels() },
    spec: { type: 'ClusterIP', ports: [{ name: 'http', port: ACTIVATOR_SERVICE_PORT, targetPort: a.port, protocol: 'TCP' }] },
  };
}

export function activatorEndpointsManifest(vpcId: string, a: ActivatorEndpoint): Manifest {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: ACTIVATOR_SERVICE,
      namespace: vpcNamespace(vpcId),
      labels: {
        ...activatorLabels(),
        'kubernetes.io/service-name': ACTIVATOR_SERVICE,
        // Kubernetes' EndpointSlice controller leaves slices managed by others alone.
        'endpointslice.kubernetes.io/managed-by': 'pier-compute',
      },
    },
    addressType: 'IPv4',
    endpoints: a.addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
    ports: [{ name: 'http', port: a.port, protocol: 'TCP' }],
  };
}

/** The Ingress of a web service; `viaActivator`: to the activator's Service (an elastic service: it may be asleep, and its requests are counted). */
export function ingressManifest(r: EdgeRoute, s: IngressSettings, viaActivator = false): Manifest {
  const backend = viaActivator
    ? { service: { name: ACTIVATOR_SERVICE, port: { number: ACTIVATOR_SERVICE_PORT } } }
    : { service: { name: r.serviceName, port: { number: r.port } } };
  const tls = [
    ...(s.appsTlsSecret ? [{ hosts: [r.serviceHost], secretName: s.appsTlsSecret }] : []),
    ...r.tlsHosts.map((h) => ({ hosts: [h], secretName: tlsSecretName(h) })),
  ];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: r.serviceName, namespace: vpcNamespace(r.vpcId), labels: labels(r) },
    spec: {
      ...(s.ingressClass ? { ingressClassName: s.ingressClass } : {}),
      ...(tls.length ? { tls } : {}),
      rules: [r.serviceHost, ...r.customHosts].map((host) => ({
        host,
        http: { paths: [{ path: '/', pathType: 'Prefix', backend }] },
      })),
    },
  };
}

export function certificateManifest(r: EdgeRoute, hostname: string, s: IngressSettings): Manifest {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: certificateName(hostname), namespace: vpcNamespace(r.vpcId), labels: labels(r) },
    spec: {
      secretName: tlsSecretName(hostname),
      dnsNames: [hostname],
      issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: s.clusterIssuer },
      // Renewed by cert-manager this long before expiry (Pier's margin on docker is the same setting's default).
      renewBefore: '720h',
    },
  };
}
