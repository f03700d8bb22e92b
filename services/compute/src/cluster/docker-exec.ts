import type { Socket } from 'node:net';
import { PassThrough, type Duplex } from 'node:stream';
import type { ShellOptions, ShellPort, ShellProcess, ShellReplica } from '../domain/exec/shell-port.ts';
import type { WorkloadRef } from '../domain/cluster-port.ts';
import type { DockerEngine } from './docker-engine.ts';
import { KIND_SERVICE, LABEL } from './docker-labels.ts';
import { killCommand, markerStripper, pidWithin, wrapped } from './shell-wrapper.ts';

// Shells on the docker adapter: an exec in the replica's container over a hijacked
// connection (raw with a TTY, multiplexed stdout/stderr without), under the wrapper of
// shell-wrapper.ts so that ending a session ends its process.

/** Resolves once `socket` can take more (or is gone). */
function drainOf(socket: Duplex): Promise<void> {
  if (!socket.writableNeedDrain || socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

export class DockerShell implements ShellPort {
  constructor(private readonly engine: DockerEngine) {}

  async runningReplicas(ref: WorkloadRef): Promise<ShellReplica[]> {
    const containers = await this.engine.call('container list', () =>
      this.engine.docker.listContainers({
        filters: JSON.stringify({
          label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.service}=${ref.serviceId}`, `${LABEL.role}=replica`],
          status: ['running'],
        }),
      }),
    );
    return containers.map((c) => ({ replica: c.Labels[LABEL.replica] ?? '0', handle: c.Id })).sort((a, b) => Number(a.replica) - Number(b.replica));
  }

  async open(_ref: WorkloadRef, replica: ShellReplica, opts: ShellOptions): Promise<ShellProcess> {
    const container = this.engine.docker.getContainer(replica.handle);
    const exec = await this.engine.call('exec create', () =>
      container.exec({
        Cmd: wrapped(opts.command),
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: opts.tty,
        User: String(opts.user),
        ...(opts.tty ? { Env: ['TERM=xterm-256color'] } : {}),
      }),
    );
    const socket = (await this.engine.call('exec start', () => exec.start({ hijack: true, stdin: true, Tty: opts.tty }))) as Duplex;
    socket.on('error', () => undefined);
    // The engine's request deadline stays on the socket it hands over: a shell may be quiet for long.
    (socket as Partial<Socket>).setTimeout?.(0);
    let resolvePid!: (pid: number | null) => void;
    const pid = new Promise<number | null>((resolve) => (resolvePid = resolve));
    const output = markerStripper(resolvePid);
    if (opts.tty) socket.pipe(output);
    else {
      // stdout and stderr into one stream, frame by frame, in the order they were written.
      const merged = new PassThrough();
      this.engine.docker.modem.demuxStream(socket, merged, merged);
      socket.on('end', () => merged.end());
      merged.pipe(output);
    }
    if (opts.tty && opts.cols && opts.rows) await exec.resize({ w: opts.cols, h: opts.rows }).catch(() => undefined);
    let killed = false;
    const exited = new Promise<number | null>((resolve) => {
      socket.once('close', async () => {
        resolvePid(null);
        if (killed) return resolve(null);
        // The connection ends as the process does; its code is there a moment later.
        for (let i = 0; i < 40; i++) {
          const info = await exec.inspect().catch(() => undefined);
          if (!info?.Running) return resolve(info?.ExitCode ?? null);
          await new Promise((r) => setTimeout(r, 50));
        }
        resolve(null);
      });
    });
    return {
      output,
      exited,
      // The socket's own buffer is the bound: write() answers false past its high-water mark.
      write: (data) => socket.write(data),
      drained: () => drainOf(socket),
      endInput: () => socket.end(),
      resize: async (cols, rows) => {
        if (opts.tty) await this.engine.call('exec resize', () => exec.resize({ w: cols, h: rows }));
      },
      kill: async () => {
        if (killed) return;
        killed = true;
        const target = await pidWithin(pid);
        if (target !== null) {
          // As the service's user: with no-new-privileges, root in an exec of a container
          // started as another user holds no capabilities, so cannot signal its processes.
          const killer = await this.engine.call('exec create', () => container.exec({ Cmd: killCommand(target), User: String(opts.user) }));
          await this.engine.call('exec start', async () => {
            const s = (await killer.start({ hijack: true, stdin: false })) as Duplex;
            s.resume();
            await new Promise((r) => s.once('close', r));
          });
        }
        socket.destroy();
      },
    };
  }
}
