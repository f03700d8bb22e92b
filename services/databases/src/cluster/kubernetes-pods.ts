import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, Exec, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { ConflictError, isKubernetesNotFound, UnavailableError } from '@pier/kit';
import { exitCodeOf, kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { ExecResult } from './docker-engine.ts';

// What the built-in kubernetes mode does inside its database pods, as the docker adapter
// does with `docker exec` and one-off containers: the images' own commands (`pier-access`,
// `pier-backup`, `pier-health`, `pier-replication-role`) run over the exec subresource,
// and a one-off pod runs `pier-backup` where no server is running (a deleted database's
// backups).

/** How long one exec may take: a backup starts in the background, a listing reads the store. */
const EXEC_TIMEOUT_MS = 120_000;

export class PodCommands {
  private readonly core: CoreV1Api;
  private readonly exec: Exec;

  constructor(kc: KubeConfig, timeoutMs = 10_000) {
    this.core = new CoreV1Api(kubernetesApiConfiguration(kc, timeoutMs));
    this.exec = new Exec(kc);
  }

  /** Runs `cmd` in a running pod's container to its end; its output and exit code. */
  async run(namespace: string, pod: string, container: string, cmd: string[]): Promise<ExecResult> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    stdout.on('data', (d: Buffer) => out.push(d));
    stderr.on('data', (d: Buffer) => err.push(d));
    let status: V1Status | undefined;
    const socket = await this.exec
      .exec(namespace, pod, container, cmd, stdout, stderr, null, false, (s) => (status = s))
      .catch((e: unknown) => {
        // The API server answers an exec into a pod that is not running with 400 (or 404 once gone).
        throw new ConflictError(`the database server is not running; retry once it is (${(e as Error)?.message ?? e})`, 'database_not_running');
      });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.close();
        reject(new UnavailableError(`${cmd[0]} did not finish within ${EXEC_TIMEOUT_MS / 1000} s`, 'cluster_unavailable'));
      }, EXEC_TIMEOUT_MS);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const exitCode = status ? exitCodeOf(status) : null;
    return { exitCode: exitCode ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') || (status?.message ?? '') };
  }

  async pods(namespace: string, selector: string): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  }

  /**
   * Runs a pod to its end and returns what it printed: a one-off of the engine's image.
   * The pod (named uniquely by the caller) is deleted afterwards whatever happened.
   */
  async runToEnd(pod: V1Pod, timeoutMs = EXEC_TIMEOUT_MS): Promise<ExecResult> {
    const namespace = pod.metadata!.namespace!;
    const name = pod.metadata!.name!;
    await this.core.createNamespacedPod({ namespace, body: pod });
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const seen = await this.core.readNamespacedPod({ namespace, name });
        const phase = seen.status?.phase;
        if (phase === 'Succeeded' || phase === 'Failed') {
          const log = await this.core.readNamespacedPodLog({ namespace, name });
          const code = seen.status?.containerStatuses?.[0]?.state?.terminated?.exitCode ?? (phase === 'Succeeded' ? 0 : 1);
          return { exitCode: code, stdout: String(log ?? ''), stderr: code === 0 ? '' : String(log ?? '') };
        }
        const waiting = seen.status?.containerStatuses?.[0]?.state?.waiting;
        if (waiting && /ImagePull|ErrImage|CreateContainerConfigError|InvalidImageName/.test(waiting.reason ?? '')) {
          throw new UnavailableError(`the cluster cannot start ${name}: ${waiting.reason} ${waiting.message ?? ''}`.trim(), 'cluster_error');
        }
        if (Date.now() > deadline) throw new UnavailableError(`${name} did not finish within ${timeoutMs / 1000} s`, 'cluster_unavailable');
        await sleep(300);
      }
    } finally {
      await this.deletePod(namespace, name, 0);
    }
  }

  private async deletePod(namespace: string, name: string, gracePeriodSeconds: number): Promise<void> {
    try {
      await this.core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds });
    } catch (err) {
      if (!isKubernetesNotFound(err)) throw err;
    }
  }
}
