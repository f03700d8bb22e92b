// The edge: the reverse proxy in front of every web service. The domain hands it the whole
// routing table (which host goes to which service) and asks it for certificates; the
// docker adapter runs a Caddy container (cluster/docker-edge.ts), the kubernetes adapter
// writes Ingresses and cert-manager Certificates (cluster/kubernetes-edge.ts).

export interface EdgeRoute {
  workspaceId: string;
  vpcId: string;
  serviceId: string;
  serviceName: string;
  /** The port the service's replicas listen on. */
  port: number;
  /** The service's own host under the apps domain. */
  serviceHost: string;
  /** Custom hostnames routed to the service (verified or active domains). */
  customHosts: string[];
  /** Custom hostnames whose certificate is installed (served over TLS). */
  tlsHosts: string[];
  /**
   * An elastic service's requests go through the activator (edge/activator.ts), which holds
   * them through a wake and counts them for autoscaling; with its health check path. Null:
   * straight to the replicas.
   */
  activator: { healthPath: string | null } | null;
}

/** Where a certificate stands, as the edge reports it. */
export type TlsOutcome = { status: 'issued'; issuer: string; expiresAt: Date } | { status: 'pending'; detail: string } | { status: 'failed'; error: string };

export interface EdgeEntry {
  host: string;
  port: number;
  caPem?: string;
}

export interface EdgePort {
  readonly kind: 'docker' | 'kubernetes';
  /**
   * Makes the edge route exactly these services and hosts (a host missing from the table
   * stops routing). Idempotent, and cheap when nothing changed since the last call.
   */
  sync(routes: EdgeRoute[]): Promise<void>;
  /** Addresses an apex domain's A/AAAA records may point at (configured, or the edge's own). */
  addresses(): Promise<string[]>;
  /**
   * Obtains (or renews) the certificate of a custom hostname that already routes to its
   * service, and installs it on the edge. docker: Pier's ACME client over HTTP-01, the
   * challenge answered by the edge, so the outcome is known when it returns; kubernetes:
   * a cert-manager Certificate, so it may answer `pending` and be asked again (it is
   * idempotent there: the same Certificate, its current status).
   */
  certify(route: EdgeRoute, hostname: string): Promise<TlsOutcome>;
  /**
   * Where users' traffic enters the edge, for checks that reach a service as its users do
   * (uptime): an address, the HTTPS port, and the CA of the apps domain's certificate when
   * it is not a public one. Null when the edge cannot say (kubernetes without addresses).
   */
  entry(): Promise<EdgeEntry | null>;
  /** Removes a hostname's certificate from the edge (nothing to remove is not an error). */
  removeCertificate(route: Pick<EdgeRoute, 'vpcId' | 'serviceName'>, hostname: string): Promise<void>;
}
