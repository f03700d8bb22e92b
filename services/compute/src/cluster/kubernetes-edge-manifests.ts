// The Kubernetes objects of the edge: an Ingress per web service (its own host and its
// custom domains) and a cert-manager Certificate per custom domain. Pure functions: the
// adapter sends them, the tests validate them against the schemas and the CRDs.
import { createHash } from 'node:crypto';
import { vpcNamespace } from '@pier/kit';
import type { EdgeRoute } from '../domain/edge/edge-port.ts';
import { K8S_LABEL, serviceLabels, type Manifest } from './kubernetes-manifests.ts';

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

export function ingressManifest(r: EdgeRoute, s: IngressSettings): Manifest {
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
        http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: r.serviceName, port: { number: r.port } } } }] },
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
