import { KubeConfig, ServerConfiguration, createConfiguration, type Configuration, type RequestContext, type ResponseContext } from '@kubernetes/client-node';

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

/**
 * The API server answers a server-side apply that names a field the schema does not declare
 * with a 500 ("failed to create typed patch object ...: .spec.x: field not declared in
 * schema"), though the request is at fault, not the server: a refusal, not an outage.
 */
export function isRefusedApply(err: unknown): boolean {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | undefined;
  if (e?.code !== 500) return false;
  const text = `${typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? '')} ${String(e.message ?? '')}`;
  return /failed to create typed patch object/.test(text);
}
