import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { UnavailableError, vpcNamespace } from '@pier/kit';
import { exitCodeOf, kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { ShellOptions, ShellPort, ShellProcess, ShellReplica } from '../domain/exec/shell-port.ts';
import type { WorkloadRef } from '../domain/cluster-port.ts';
import { K8S_LABEL, MANAGED_BY } from './kubernetes-manifests.ts';
import { kubernetesCall } from './kubernetes.ts';
import { killCommand, markerStripper, pidWithin, wrapped } from './shell-wrapper.ts';

// Shells on the kubernetes adapter: the pod exec subresource over a WebSocket, through
// client-node. Its channel protocol numbers every frame: 0 stdin, 1 stdout, 2 stderr,
// 3 the final status (the exit code), 4 terminal size; v5 adds 255 "close this channel",
// the only way to send stdin EOF without closing the socket (and with it the session).
// Under v4 and older, EOF on stdin ends the session. Replicas are pods, named as such.

const STDIN = 0;
const RESIZE = 4;
const CLOSE = 255;
const CONTAINER = 'app';
/**
 * Stdin handed to the socket and not yet on the wire, past which write() says stop (the
 * kubelet stops reading a stdin the process does not read, and so does the API server).
 */
const STDIN_WINDOW = 1 << 20;

function frame(channel: number, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from([channel]), data]);
}

export class KubernetesShell implements ShellPort {
  private readonly core: CoreV1Api;
  private readonly exec: Exec;

  constructor(kc: KubeConfig, timeoutMs = 10_000) {
    this.core = new CoreV1Api(kubernetesApiConfiguration(kc, timeoutMs));
    this.exec = new Exec(kc);
  }

  async runningReplicas(ref: WorkloadRef): Promise<ShellReplica[]> {
    const selector = `${K8S_LABEL.managedBy}=${MANAGED_BY},${K8S_LABEL.service}=${ref.serviceId},${K8S_LABEL.role}=replica`;
    const pods = await kubernetesCall('list pods', () => this.core.listNamespacedPod({ namespace: vpcNamespace(ref.vpcId), labelSelector: selector }));
    return pods.items
      .filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata!.name!)
      .sort()
      .map((name) => ({ replica: name, handle: name }));
  }

  async open(ref: WorkloadRef, replica: ShellReplica, opts: ShellOptions): Promise<ShellProcess> {
    const namespace = vpcNamespace(ref.vpcId);
    const stdout = new PassThrough();
    const stderr = opts.tty ? null : new PassThrough();
    const stdin = new PassThrough();
    let resolvePid!: (pid: number | null) => void;
    const pid = new Promise<number | null>((resolve) => (resolvePid = resolve));
    const output = markerStripper(resolvePid);
    // One output stream, as on docker: stdout and stderr in the order they arrive.
    let open = stderr ? 2 : 1;
    const merge = (s: PassThrough) => {
      s.on('data', (d: Buffer) => output.write(d));
      s.on('end', () => --open === 0 && output.end());
    };
    merge(stdout);
    if (stderr) merge(stderr);
    let status: V1Status | undefined;
    // The user is the pod's own (its securityContext runs it as the service's user): the
    // exec subresource has no user of its own.
    const socket = await this.exec
      .exec(namespace, replica.handle, CONTAINER, wrapped(opts.command), stdout, stderr, stdin, opts.tty, (s) => (status = s))
      .catch((err: unknown) => {
        throw new UnavailableError(`the cluster refused the shell (kubernetes exec: ${(err as Error)?.message ?? String(err)})`, 'cluster_unavailable');
      });
    // Stdin goes out as frames of our own, not through client-node's stream (`stdin` only asks
    // the API server for the channel): client-node sends whatever the stream gives at once,
    // so a process that never reads would have compute hold all of it.
    let unsent = 0;
    let waiting: (() => void)[] = [];
    const release = () => {
      const ready = waiting;
      waiting = [];
      for (const resolve of ready) resolve();
    };
    let killed = false;
    const exited = new Promise<number | null>((resolve) => {
      socket.on('close', () => {
        release();
        resolvePid(null);
        if (!stdout.writableEnded) stdout.end();
        if (stderr && !stderr.writableEnded) stderr.end();
        resolve(killed || !status ? null : exitCodeOf(status));
      });
    });
    const resize = async (cols: number, rows: number) => {
      if (opts.tty && socket.readyState === socket.OPEN) socket.send(frame(RESIZE, Buffer.from(JSON.stringify({ Width: cols, Height: rows }))));
    };
    if (opts.cols && opts.rows) await resize(opts.cols, opts.rows);
    return {
      output,
      exited,
      write: (data) => {
        if (socket.readyState !== socket.OPEN) return true;
        const bytes = data.length + 1;
        unsent += bytes;
        // The callback runs once the frame is handed to the network (or the socket failed).
        socket.send(frame(STDIN, data), () => {
          unsent -= bytes;
          if (unsent <= STDIN_WINDOW / 2) release();
        });
        return unsent <= STDIN_WINDOW;
      },
      drained: () =>
        unsent <= STDIN_WINDOW / 2 || socket.readyState !== socket.OPEN ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve)),
      endInput: () => {
        if (socket.protocol === 'v5.channel.k8s.io') socket.send(Buffer.from([CLOSE, STDIN]));
        else socket.close();
      },
      resize,
      kill: async () => {
        if (killed) return;
        killed = true;
        const target = await pidWithin(pid);
        if (target !== null) {
          const done = new Promise<void>((resolve) => {
            // The API server refuses an exec with no stream at all (400: "you must specify at
            // least 1 of stdin, stdout, stderr"): the kill's (empty) output is taken and dropped.
            const sink = new PassThrough().resume();
            void this.exec
              .exec(namespace, replica.handle, CONTAINER, killCommand(target), sink, null, null, false, () => resolve())
              .then((ws) => ws.on('close', () => resolve()))
              .catch(() => resolve());
          });
          await Promise.race([done, sleep(5000, undefined, { ref: false })]);
        }
        socket.close();
      },
    };
  }
}
