// The Kubernetes objects one service becomes. Pure functions: the adapter sends them, the
// tests validate them against the Kubernetes schemas.
import { secretObjectName, vpcNamespace } from '@pier/kit';
import { isReference } from '../domain/env/env-input.ts';
import type { VpcScope, WorkloadRef, WorkloadSpec } from '../domain/cluster-port.ts';

export const K8S_LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  name: 'app.kubernetes.io/name',
  kind: 'pier.dev/kind',
  workspace: 'pier.dev/workspace',
  vpc: 'pier.dev/vpc',
  service: 'pier.dev/service',
  deployment: 'pier.dev/deployment',
  role: 'pier.dev/role',
} as const;
export const MANAGED_BY = 'pier';
/** Namespaces carrying this label (an ingress controller's) may reach a VPC's services. */
export const INGRESS_NAMESPACE_LABEL = 'pier.dev/ingress';
/** Pod Security Admission's label: every pod of a VPC namespace must meet the `restricted` standard. */
export const POD_SECURITY_ENFORCE = 'pod-security.kubernetes.io/enforce';
/**
 * Where a tenant's pods must never connect: private ranges (the nodes, the cluster's own pod and
 * Service addresses, the host's networks), link-local (169.254.169.254, a cloud's metadata and
 * the node's credentials), loopback, CGNAT, multicast, "this network".
 */
export const NON_PUBLIC_RANGES = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '169.254.0.0/16',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '0.0.0.0/8',
  '224.0.0.0/4',
];
/** The label selector of every pod compute runs, in every VPC namespace. */
export const POD_SELECTOR = `${K8S_LABEL.managedBy}=${MANAGED_BY},${K8S_LABEL.kind}=service`;

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
};

/** The rollout deadline, matched with the domain's PROGRESS_DEADLINE_MS. */
const PROGRESS_DEADLINE_SECONDS = 180;
const STARTING_DEADLINE_SECONDS = 120;

export function diskClaimName(serviceName: string): string {
  return `${serviceName}-disk`;
}

/** The claim that is the service's disk: the one it was created with, or the one a restore made (kubernetes-disk-backups.ts). */
export function claimOf(spec: WorkloadSpec): string {
  return spec.diskVolume ?? diskClaimName(spec.serviceName);
}

export function serviceLabels(ref: WorkloadRef): Record<string, string> {
  return {
    [K8S_LABEL.managedBy]: MANAGED_BY,
    [K8S_LABEL.kind]: 'service',
    [K8S_LABEL.name]: ref.serviceName,
    [K8S_LABEL.workspace]: ref.workspaceId,
    [K8S_LABEL.vpc]: ref.vpcId,
    [K8S_LABEL.service]: ref.serviceId,
  };
}

function meta(ref: WorkloadRef, name: string) {
  return { name, namespace: vpcNamespace(ref.vpcId), labels: serviceLabels(ref) };
}

export function cpuQuantity(cpu: number): string {
  return `${Math.round(cpu * 1000)}m`;
}

export function namespaceManifest(scope: VpcScope): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: vpcNamespace(scope.vpcId),
      labels: {
        [K8S_LABEL.managedBy]: MANAGED_BY,
        [K8S_LABEL.workspace]: scope.workspaceId,
        [K8S_LABEL.vpc]: scope.vpcId,
        // The API server refuses a pod that could gain privileges, whoever made it (podTemplate).
        [POD_SECURITY_ENFORCE]: 'restricted',
      },
    },
  };
}

/** A VPC is its namespace: pods take traffic from their own namespace and the ingress controller's only. */
export function networkPolicyManifest(scope: VpcScope): Manifest {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'pier-vpc-isolation', namespace: vpcNamespace(scope.vpcId), labels: { [K8S_LABEL.managedBy]: MANAGED_BY } },
    spec: {
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: {} }, { namespaceSelector: { matchLabels: { [INGRESS_NAMESPACE_LABEL]: 'true' } } }] }],
    },
  };
}

/**
 * What a service's pods may reach: the pods of their own VPC (its services and databases), DNS,
 * and public addresses; never the nodes, other namespaces or link-local addresses. The
 * databases' pods of the namespace are not selected: theirs is the databases service's policy.
 */
export function egressPolicyManifest(scope: VpcScope): Manifest {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'pier-vpc-egress', namespace: vpcNamespace(scope.vpcId), labels: { [K8S_LABEL.managedBy]: MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { [K8S_LABEL.managedBy]: MANAGED_BY, [K8S_LABEL.kind]: 'service' } },
      policyTypes: ['Egress'],
      egress: [
        { to: [{ podSelector: {} }] },
        {
          to: [{ namespaceSelector: {} }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
        { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: NON_PUBLIC_RANGES } }] },
      ],
    },
  };
}

/**
 * Why `spec` cannot run in a VPC namespace, or null. The `restricted` standard admits no pod
 * running as uid 0, so run_as_user 0 (allowed on docker, where it is a root without any
 * capability) is refused here before any object is written.
 */
export function podSecurityProblem(spec: WorkloadSpec): string | null {
  return spec.config.run_as_user === 0
    ? 'run_as_user 0 (root) cannot run on this cluster: VPC namespaces enforce the Pod Security Standard "restricted", which admits no pod running as root; choose another user'
    : null;
}

function env(spec: WorkloadSpec) {
  return spec.env.map((e) =>
    isReference(e) ? { name: e.key, valueFrom: { secretKeyRef: { name: secretObjectName(e.secret_id), key: e.secret_key } } } : { name: e.key, value: e.value },
  );
}

function podTemplate(spec: WorkloadSpec, role: 'replica' | 'run') {
  const c = spec.config;
  const resources = { cpu: cpuQuantity(spec.resources.cpu), memory: `${spec.resources.memoryMiB}Mi` };
  const container: Record<string, unknown> = {
    name: 'app',
    image: spec.image,
    imagePullPolicy: 'IfNotPresent',
    // No empty list: the API server would not store one (the object read back has no `env`).
    ...(spec.env.length ? { env: env(spec) } : {}),
    resources: { requests: resources, limits: resources },
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
  };
  if (c.command) container.command = c.command;
  if (c.args && c.args.length) container.args = c.args;
  if (c.port !== null) container.ports = [{ name: 'http', containerPort: c.port, protocol: 'TCP' }];
  if (c.service_type === 'web' && c.health_check_path && c.port !== null) {
    container.readinessProbe = { httpGet: { path: c.health_check_path, port: c.port }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 };
  }
  if (c.disk_mount_path) container.volumeMounts = [{ name: 'disk', mountPath: c.disk_mount_path }];
  return {
    metadata: {
      labels: { ...serviceLabels(spec), [K8S_LABEL.deployment]: spec.deploymentId, [K8S_LABEL.role]: role },
      annotations: { [K8S_LABEL.deployment]: spec.deploymentId },
    },
    spec: {
      containers: [container],
      restartPolicy: role === 'run' ? 'Never' : 'Always',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // The Pod Security Standard `restricted`, which the namespace enforces (podSecurityProblem
      // refuses uid 0 first). A port under 1024 needs no capability: the pod's own network
      // namespace lets any user bind it, as Docker's do by default.
      securityContext: {
        runAsUser: c.run_as_user,
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
        ...(c.disk_mount_path ? { fsGroup: c.run_as_user } : {}),
        ...(c.port !== null && c.port < 1024 ? { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] } : {}),
      },
      ...(c.disk_mount_path ? { volumes: [{ name: 'disk', persistentVolumeClaim: { claimName: claimOf(spec) } }] } : {}),
    },
  };
}

/**
 * An HPA when the service may grow past its floor and the elastic controller does not
 * choose its replicas (`spec.replicas`: web services behind the activator, scaled on their
 * requests); HPAs never act on zero replicas, so the floor is at least 1.
 */
export function wantsAutoscaler(spec: WorkloadSpec): boolean {
  const c = spec.config;
  return spec.replicas === undefined && c.service_type !== 'cron' && c.max_replicas !== null && c.max_replicas > Math.max(1, c.min_replicas);
}

export function deploymentManifest(spec: WorkloadSpec): Manifest {
  const c = spec.config;
  const body: Record<string, unknown> = {
    selector: { matchLabels: { [K8S_LABEL.service]: spec.serviceId } },
    template: podTemplate(spec, 'replica'),
    // A disk is ReadWriteOnce: the old pod must let go of it before the new one starts.
    strategy: c.disk_size_gb !== null ? { type: 'Recreate' } : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    progressDeadlineSeconds: PROGRESS_DEADLINE_SECONDS,
    revisionHistoryLimit: 3,
  };
  // With an autoscaler the replica count is its to set (sending ours would fight it), except
  // at zero; the elastic controller's count is sent as it chose it.
  if (spec.replicas !== undefined) body.replicas = spec.replicas;
  else if (!wantsAutoscaler(spec) || c.min_replicas === 0) body.replicas = c.min_replicas;
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta(spec, spec.serviceName), spec: body };
}

export function cronJobManifest(spec: WorkloadSpec): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: meta(spec, spec.serviceName),
    spec: {
      schedule: spec.config.cron_schedule!,
      timeZone: 'Etc/UTC',
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: STARTING_DEADLINE_SECONDS,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: { metadata: { labels: serviceLabels(spec) }, spec: { backoffLimit: 0, template: podTemplate(spec, 'run') } },
    },
  };
}

export function serviceManifest(spec: WorkloadSpec): Manifest {
  const port = spec.config.port!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(spec, spec.serviceName),
    spec: { type: 'ClusterIP', selector: { [K8S_LABEL.service]: spec.serviceId }, ports: [{ name: 'http', port, targetPort: port, protocol: 'TCP' }] },
  };
}

/** How the cluster's autoscaler behaves: what compute's settings say (PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS). */
export interface AutoscalingOptions {
  /** How long the load must stay low before replicas are removed (the HPA's scale-down stabilization window). */
  scaleDownDelaySeconds: number;
  /** The average CPU use the HPA aims at, in % of the request (PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT: the target workers have on docker). */
  cpuTargetPercent: number;
}

/** The settings' defaults, which are Kubernetes' own: a 300 s scale-down window, 80% CPU. */
export const DEFAULT_AUTOSCALING: AutoscalingOptions = { scaleDownDelaySeconds: 300, cpuTargetPercent: 80 };

export function autoscalerManifest(spec: WorkloadSpec, autoscaling: AutoscalingOptions = DEFAULT_AUTOSCALING): Manifest {
  const c = spec.config;
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: meta(spec, spec.serviceName),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: spec.serviceName },
      minReplicas: Math.max(1, c.min_replicas),
      maxReplicas: c.max_replicas!,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: autoscaling.cpuTargetPercent } } }],
      // Up as soon as the load says so (the HPA's default); down after the same delay as on docker.
      behavior: { scaleDown: { stabilizationWindowSeconds: autoscaling.scaleDownDelaySeconds } },
    },
  };
}

export function volumeClaimManifest(spec: WorkloadSpec): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: meta(spec, claimOf(spec)),
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${spec.config.disk_size_gb}Gi` } } },
  };
}

/** Everything one service may own, by kind and name: what delete removes. */
export function ownedObjects(ref: WorkloadRef): { apiVersion: string; kind: string; name: string }[] {
  return [
    { apiVersion: 'apps/v1', kind: 'Deployment', name: ref.serviceName },
    { apiVersion: 'batch/v1', kind: 'CronJob', name: ref.serviceName },
    { apiVersion: 'v1', kind: 'Service', name: ref.serviceName },
    { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', name: ref.serviceName },
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: diskClaimName(ref.serviceName) },
  ];
}

/** The objects `spec` needs, and those of the kinds it owns that it must not have (to delete). */
export function desiredObjects(
  spec: WorkloadSpec,
  autoscaling: AutoscalingOptions = DEFAULT_AUTOSCALING,
): { apply: Manifest[]; remove: { apiVersion: string; kind: string; name: string }[] } {
  const c = spec.config;
  const apply: Manifest[] = [];
  if (c.disk_size_gb !== null) apply.push(volumeClaimManifest(spec));
  if (c.service_type === 'cron') apply.push(cronJobManifest(spec));
  else {
    apply.push(deploymentManifest(spec));
    if (c.port !== null) apply.push(serviceManifest(spec));
    if (wantsAutoscaler(spec)) apply.push(autoscalerManifest(spec, autoscaling));
  }
  const wanted = new Set(apply.map((m) => `${m.kind}/${m.metadata.name}`));
  // A claim a restore made is the service's too: it goes when the disk does.
  const owned = [...ownedObjects(spec), ...(spec.diskVolume ? [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: spec.diskVolume }] : [])];
  return { apply, remove: owned.filter((o) => !wanted.has(`${o.kind}/${o.name}`)) };
}
