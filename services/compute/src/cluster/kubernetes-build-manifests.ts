// The Kubernetes objects of builds: a namespace for build Jobs with an egress policy (no
// private, link-local or metadata addresses), and one Job per build running rootless BuildKit
// without a daemon, pushing to the configured registry. Pure functions: the adapter sends
// them, the tests validate them against the Kubernetes schemas.
//
// The source reaches the pod from compute (which fetched and checked it): the build container
// waits for `<workspace>/.pier-ready`, which compute's exec writes after unpacking the context
// tar it streams in. The workspace path carries the build id, so nothing else writes there.
import type { BuildTarget } from '../domain/builder-port.ts';
import { K8S_LABEL, MANAGED_BY, type Manifest } from './kubernetes-manifests.ts';

export const BUILD_CONTAINER = 'build';
export const BUILD_LABEL = 'pier.dev/build';
/** Set on a Job once compute has delivered its source: a Job without it cannot be followed after a restart. */
export const SOURCE_DELIVERED = 'pier.dev/source-delivered';

/** Where build pods must never connect (the registry and public bases are reached over the internet). */
export const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8', '0.0.0.0/8', '224.0.0.0/4'];

export interface BuildJobOptions {
  namespace: string;
  buildkitImage: string;
  /** A kubernetes.io/dockerconfigjson Secret in the namespace: the registry credentials. */
  pushSecret?: string;
  timeoutSeconds: number;
  memoryMiB: number;
}

export function buildJobName(buildId: string): string {
  return `build-${buildId}`;
}

export function buildWorkspace(buildId: string): string {
  return `/tmp/pier-build-${buildId}`;
}

function labels(t: BuildTarget): Record<string, string> {
  return {
    [K8S_LABEL.managedBy]: MANAGED_BY,
    [K8S_LABEL.kind]: 'build',
    [K8S_LABEL.workspace]: t.workspaceId,
    [K8S_LABEL.vpc]: t.vpcId,
    [K8S_LABEL.service]: t.serviceId,
    [BUILD_LABEL]: t.buildId,
  };
}

export function buildNamespaceManifest(namespace: string): Manifest {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { [K8S_LABEL.managedBy]: MANAGED_BY } } };
}

/** Build pods take no traffic, and reach DNS and public addresses only. */
export function buildNetworkPolicyManifest(namespace: string): Manifest {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'pier-build-egress', namespace, labels: { [K8S_LABEL.managedBy]: MANAGED_BY } },
    spec: {
      podSelector: { matchLabels: { [K8S_LABEL.kind]: 'build' } },
      policyTypes: ['Ingress', 'Egress'],
      egress: [
        { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_RANGES } }] },
        {
          to: [{ namespaceSelector: {} }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
      ],
    },
  };
}

/** The Job of one build: waits for its source, then builds and pushes `image`. */
export function buildJobManifest(t: BuildTarget, image: string, dockerfile: string, o: BuildJobOptions): Manifest {
  const workspace = buildWorkspace(t.buildId);
  const memory = `${o.memoryMiB}Mi`;
  const script = [
    'until [ -f "$WORKSPACE/.pier-ready" ]; do sleep 1; done',
    'exec buildctl-daemonless.sh build --frontend dockerfile.v0 --local context="$WORKSPACE/context" --local dockerfile="$WORKSPACE/context" --opt filename="$DOCKERFILE" --output "type=image,name=$IMAGE,push=true"',
  ].join('\n');
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: buildJobName(t.buildId), namespace: o.namespace, labels: labels(t) },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: o.timeoutSeconds,
      ttlSecondsAfterFinished: 3600,
      template: {
        metadata: {
          labels: labels(t),
        },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, runAsNonRoot: true },
          containers: [
            {
              name: BUILD_CONTAINER,
              image: o.buildkitImage,
              command: ['sh', '-c', script],
              env: [
                { name: 'WORKSPACE', value: workspace },
                { name: 'DOCKERFILE', value: dockerfile },
                { name: 'IMAGE', value: image },
                { name: 'BUILDKITD_FLAGS', value: '--oci-worker-no-process-sandbox' },
                ...(o.pushSecret ? [{ name: 'DOCKER_CONFIG', value: '/home/user/.docker' }] : []),
              ],
              // Rootless BuildKit makes its own user namespaces: the default seccomp and
              // AppArmor profiles forbid it. (AppArmor as a field: the annotation is deprecated
              // since Kubernetes 1.30, and the API server says so on every write.)
              securityContext: { seccompProfile: { type: 'Unconfined' }, appArmorProfile: { type: 'Unconfined' }, allowPrivilegeEscalation: true },
              resources: { requests: { cpu: '500m', memory }, limits: { memory } },
              volumeMounts: [
                { name: 'workspace', mountPath: workspace },
                { name: 'buildkit', mountPath: '/home/user/.local/share/buildkit' },
                ...(o.pushSecret ? [{ name: 'push-credentials', mountPath: '/home/user/.docker', readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            { name: 'workspace', emptyDir: {} },
            { name: 'buildkit', emptyDir: {} },
            ...(o.pushSecret
              ? [{ name: 'push-credentials', secret: { secretName: o.pushSecret, items: [{ key: '.dockerconfigjson', path: 'config.json' }] } }]
              : []),
          ],
        },
      },
    },
  };
}
