import http from 'node:http';
import https from 'node:https';
import {
  KubeConfig,
  type KubernetesObject,
  type KubernetesObjectApi,
  ServerConfiguration,
  createConfiguration,
  type Configuration,
  type RequestContext,
  type ResponseContext,
  type SecurityAuthentication,
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
    authMethods: { default: new KeptAgent(kc) },
    promiseMiddleware: [deadline],
  });
}

/**
 * The kubeconfig's authentication, with one agent kept for every request. client-node (1.4)
 * makes a new agent per request: a new connection, TLS handshake and secure context (the CA
 * parsed again) each time. Compute creating and settling 1,000 services against the fake API
 * server behind TLS (bench/compute-memory-growth.ts) used 54 s of CPU so, 19 s with the agent
 * kept (its connections kept alive), and took 158 s against 31; resident memory was the same
 * (179 and 181 MB). A new agent replaces the kept one when the TLS material the kubeconfig
 * gives changes (a client certificate renewed by an exec plugin).
 */
class KeptAgent implements SecurityAuthentication {
  private kept?: { material: string; agent: http.Agent };

  constructor(private readonly kc: KubeConfig) {}

  getName(): string {
    return 'kubeconfig';
  }

  async applySecurityAuthentication(ctx: RequestContext): Promise<void> {
    await this.kc.applySecurityAuthentication(ctx);
    const made = ctx.getAgent();
    // Proxy agents (a kubeconfig's proxy-url) are left as client-node makes them.
    if (made?.constructor !== https.Agent && made?.constructor !== http.Agent) return;
    const options = (made as http.Agent & { options: https.AgentOptions }).options;
    const material = [options.ca, options.cert, options.key, options.pfx, options.rejectUnauthorized, options.servername].map(String).join('\n');
    if (this.kept?.material !== material) {
      // The one replaced is not destroyed: requests may be under way on it.
      const agent = made instanceof https.Agent ? new https.Agent({ ...options, keepAlive: true }) : new http.Agent({ keepAlive: true });
      this.kept = { material, agent };
    }
    ctx.setAgent(this.kept.agent);
  }
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

/**
 * Every object of a kind across the cluster under a label selector, a page at a time (the
 * API server's default list has no limit): `each` sees one page, so a caller that keeps a
 * projection never holds every whole object at once. Resolves the list's resourceVersion.
 */
export async function listPages(
  objects: KubernetesObjectApi,
  what: { apiVersion: string; kind: string; labelSelector: string; pageSize?: number },
  each: (items: KubernetesObject[]) => void,
): Promise<string | undefined> {
  let next: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const page = await objects.list(
      what.apiVersion,
      what.kind,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      what.labelSelector,
      what.pageSize ?? 500,
      next,
    );
    each(page.items);
    next = page.metadata?._continue || undefined;
    resourceVersion = page.metadata?.resourceVersion;
  } while (next);
  return resourceVersion;
}
