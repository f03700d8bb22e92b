import {
  KubeConfig,
  ServerConfiguration,
  createConfiguration,
  type Configuration,
  type RequestContext,
  type ResponseContext,
  type V1Status,
} from '@kubernetes/client-node';

// How every service reaches the Kubernetes API: the same kubeconfig lookup (PIER_KUBECONFIG)
// and the same per-request deadline, whichever API class it then builds on the configuration.

/** The kubeconfig: the file given (PIER_KUBECONFIG), else the in-cluster service account, else $KUBECONFIG / ~/.kube/config. */
export function kubeConfigFrom(file?: string): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}

/**
 * A client-node configuration for the kubeconfig's current cluster, for any API class
 * (`new CoreV1Api(config)`, `new KubernetesObjectApi(config)`, ...). Every request gets a
 * deadline: a black-holed API server must become a 503, not a request that hangs while
 * its record sits pending.
 */
export function kubernetesApiConfiguration(kc: KubeConfig, timeoutMs = 10_000): Configuration {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const deadline = {
    pre: async (ctx: RequestContext) => {
      ctx.setSignal(AbortSignal.timeout(timeoutMs));
      return ctx;
    },
    post: async (ctx: ResponseContext) => ctx,
  };
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [deadline],
  });
}

/** The exit code in an exec's final status: Success is 0, NonZeroExitCode carries it. */
export function exitCodeOf(status: V1Status): number | null {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  return cause?.message !== undefined && /^\d+$/.test(cause.message) ? Number(cause.message) : null;
}

/**
 * A CreateContainerConfigError the kubelet gives while its own cache of the pod's Secrets
 * and ConfigMaps has not synced yet (a busy node): it retries by itself, so the pod is still
 * starting. A Secret that does not exist says `secret "x" not found` and stays failed.
 */
export function kubeletCatchingUp(message: string | undefined): boolean {
  return /failed to sync (secret|configmap) cache/i.test(message ?? '');
}
