// The Kubernetes objects of builds: a namespace for build Jobs with an egress policy (no
// private, link-local or metadata addresses), and one Job per build running rootless BuildKit
// without a daemon, then pushing to the configured registry. Pure functions: the adapter sends
// them, the tests validate them against the Kubernetes schemas.
//
// The source reaches the pod from compute (which fetched and checked it): the build container
// waits for `<workspace>/.pier-ready`, which compute's exec writes after unpacking the context
// tar it streams in. The workspace path carries the build id, so nothing else writes there.
//
// The pod runs in two steps, so the tenant's code never comes near the registry's push
// credentials (which could overwrite any service's image):
//   1. `build`, an init container: BuildKit runs the tenant's Dockerfile (its RUN steps share
//      this container's processes and files: `--oci-worker-no-process-sandbox`) and exports
//      the image as an OCI archive into the pod's `image` volume. No credential, no registry
//      name: it does not even know where the image goes.
//   2. `push`, the only regular container, starts once `build` has exited successfully — so
//      every process the tenant started is gone (a container's processes die with it) and
//      nothing can swap the archive while it is read. It alone mounts the credentials, runs
//      skopeo (pier/image-push) and reports the pushed manifest's digest as its termination
//      message, which is where compute reads it, during the build or after a restart.
// An init container rather than two side by side waiting on a marker: a build container that
// dies (out of memory, killed) fails the pod at once instead of leaving a push container
// waiting until the deadline, and the two never run at the same time.
import type { BuildTarget } from '../domain/builds/builder-port.ts';
import { K8S_LABEL, MANAGED_BY, NON_PUBLIC_RANGES, type Manifest } from './kubernetes-manifests.ts';

export const BUILD_CONTAINER = 'build';
export const PUSH_CONTAINER = 'push';
export const BUILD_LABEL = 'pier.dev/build';
/** Set on a Job once compute has delivered its source: a Job without it cannot be followed after a restart. */
export const SOURCE_DELIVERED = 'pier.dev/source-delivered';

/** Where build pods must never connect (the registry and public bases are reached over the internet). */
export const PRIVATE_RANGES = NON_PUBLIC_RANGES;

/** Where the build leaves the image (an OCI archive) for the push container: a volume of the pod alone. */
const IMAGE_DIR = '/pier/image';
const ARCHIVE = `${IMAGE_DIR}/image.tar`;
const CREDENTIALS_DIR = '/pier/push-credentials';
const REGISTRY_CA_DIR = '/pier/registry-ca';
/** Where the push container writes its outcome: the kubelet keeps it as `state.terminated.message`. */
const TERMINATION_LOG = '/dev/termination-log';

/**
 * The push container's script (pier/image-push: Debian's skopeo). Env: ARCHIVE (the OCI
 * archive), IMAGE (where it goes), RESULT (the termination message file), TMPDIR (where
 * skopeo unpacks the archive: given as --tmpdir, since skopeo 1.9 ignores the variable and
 * the root is read-only), AUTHFILE (the credentials, when there are any), CERT_DIR (where
 * the registry's CA is, as `ca.crt`, when it has its own). On success RESULT
 * holds the digest (`sha256:...`) and stdout says what was pushed; on failure RESULT holds
 * the end of skopeo's error. The archive is refused unless it is a regular file: it sits
 * in a volume the build container could write to (a link to the credentials, say).
 */
export const PUSH_SCRIPT = [
  'set -u',
  'if [ ! -f "$ARCHIVE" ] || [ -L "$ARCHIVE" ]; then echo "the build left no image archive" | tee "$RESULT" >&2; exit 1; fi',
  'if ! out=$(skopeo --tmpdir "$TMPDIR" copy --retry-times 3 --digestfile "$TMPDIR/digest" ${AUTHFILE:+--dest-authfile "$AUTHFILE"} ${CERT_DIR:+--dest-cert-dir "$CERT_DIR"} "oci-archive:$ARCHIVE" "docker://$IMAGE" 2>&1); then',
  '  printf \'%s\\n\' "$out" >&2',
  '  printf \'%s\' "$out" | tail -c 2000 >"$RESULT"',
  '  exit 1',
  'fi',
  'digest=$(cat "$TMPDIR/digest")',
  'printf \'%s\' "$digest" >"$RESULT"',
  'echo "pushed $IMAGE@$digest"',
].join('\n');

export interface BuildJobOptions {
  namespace: string;
  buildkitImage: string;
  /** The image of the push container (pier/image-push: skopeo). */
  pushImage: string;
  /** A kubernetes.io/dockerconfigjson Secret in the namespace: the registry credentials, mounted in the push container only. */
  pushSecret?: string;
  /**
   * A ConfigMap in the namespace whose `ca.crt` signs the registry's certificate (a private
   * registry): BuildKit trusts it for the base images it pulls from there, skopeo for the push.
   */
  registryCa?: string;
  /** Capabilities added to the build container's bounding set (PIER_BUILDKIT_ADD_CAPABILITIES; none by default). */
  buildCapabilities?: string[];
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

/** The Job of one build: waits for its source, builds it into an OCI archive, then pushes that to `image`. */
export function buildJobManifest(t: BuildTarget, image: string, dockerfile: string, o: BuildJobOptions): Manifest {
  const workspace = buildWorkspace(t.buildId);
  const memory = `${o.memoryMiB}Mi`;
  const registryHost = image.split('/')[0]!;
  const script = [
    'until [ -f "$WORKSPACE/.pier-ready" ]; do sleep 1; done',
    // Rootless buildkitd reads ~/.config/buildkit/buildkitd.toml: the registry's own CA, when it has one.
    ...(o.registryCa
      ? [
          'mkdir -p "$HOME/.config/buildkit"',
          'printf \'[registry."%s"]\\n  ca = ["%s"]\\n\' "$REGISTRY_HOST" "$REGISTRY_CA" >"$HOME/.config/buildkit/buildkitd.toml"',
        ]
      : []),
    'exec buildctl-daemonless.sh build --frontend dockerfile.v0 --local context="$WORKSPACE/context" --local dockerfile="$WORKSPACE/context" --opt filename="$DOCKERFILE" --output "type=oci,dest=$ARCHIVE"',
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
          initContainers: [
            {
              name: BUILD_CONTAINER,
              image: o.buildkitImage,
              command: ['sh', '-c', script],
              env: [
                { name: 'WORKSPACE', value: workspace },
                { name: 'DOCKERFILE', value: dockerfile },
                { name: 'ARCHIVE', value: ARCHIVE },
                { name: 'BUILDKITD_FLAGS', value: '--oci-worker-no-process-sandbox' },
                ...(o.registryCa
                  ? [
                      { name: 'REGISTRY_HOST', value: registryHost },
                      { name: 'REGISTRY_CA', value: `${REGISTRY_CA_DIR}/ca.crt` },
                    ]
                  : []),
              ],
              // Rootless BuildKit makes its own user namespaces: the default seccomp and
              // AppArmor profiles forbid it. (AppArmor as a field: the annotation is deprecated
              // since Kubernetes 1.30, and the API server says so on every write.)
              securityContext: {
                seccompProfile: { type: 'Unconfined' },
                appArmorProfile: { type: 'Unconfined' },
                allowPrivilegeEscalation: true,
                ...(o.buildCapabilities?.length ? { capabilities: { add: o.buildCapabilities } } : {}),
              },
              resources: { requests: { cpu: '500m', memory }, limits: { memory } },
              volumeMounts: [
                { name: 'workspace', mountPath: workspace },
                { name: 'buildkit', mountPath: '/home/user/.local/share/buildkit' },
                { name: 'image', mountPath: IMAGE_DIR },
                ...(o.registryCa ? [{ name: 'registry-ca', mountPath: REGISTRY_CA_DIR, readOnly: true }] : []),
              ],
            },
          ],
          containers: [
            {
              name: PUSH_CONTAINER,
              image: o.pushImage,
              command: ['sh', '-c', PUSH_SCRIPT],
              env: [
                { name: 'ARCHIVE', value: ARCHIVE },
                { name: 'IMAGE', value: image },
                { name: 'RESULT', value: TERMINATION_LOG },
                { name: 'TMPDIR', value: '/tmp' },
                { name: 'HOME', value: '/tmp' },
                ...(o.pushSecret ? [{ name: 'AUTHFILE', value: `${CREDENTIALS_DIR}/config.json` }] : []),
                ...(o.registryCa ? [{ name: 'CERT_DIR', value: REGISTRY_CA_DIR }] : []),
              ],
              // The digest is read from here, also after a compute restart; a push container
              // that dies before writing it leaves the end of its log instead.
              terminationMessagePath: TERMINATION_LOG,
              terminationMessagePolicy: 'FallbackToLogsOnError',
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
              volumeMounts: [
                { name: 'image', mountPath: IMAGE_DIR, readOnly: true },
                { name: 'push-tmp', mountPath: '/tmp' },
                ...(o.pushSecret ? [{ name: 'push-credentials', mountPath: CREDENTIALS_DIR, readOnly: true }] : []),
                ...(o.registryCa ? [{ name: 'registry-ca', mountPath: REGISTRY_CA_DIR, readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            { name: 'workspace', emptyDir: {} },
            { name: 'buildkit', emptyDir: {} },
            { name: 'image', emptyDir: {} },
            { name: 'push-tmp', emptyDir: {} },
            ...(o.pushSecret
              ? [{ name: 'push-credentials', secret: { secretName: o.pushSecret, items: [{ key: '.dockerconfigjson', path: 'config.json' }] } }]
              : []),
            ...(o.registryCa ? [{ name: 'registry-ca', configMap: { name: o.registryCa, items: [{ key: 'ca.crt', path: 'ca.crt' }] } }] : []),
          ],
        },
      },
    },
  };
}
