// Service logs on Docker: each replica container's `logs` (timestamps on, stdout and stderr
// multiplexed since Pier's containers have no TTY), followed with `since` to resume, and the
// events API to learn at once that a replica started.
import Docker from 'dockerode';
import { isDockerNotFound, type Logger } from '@pier/kit';
import type { WorkloadRef } from '../domain/cluster-port.ts';
import type { LogLine, LogReplica, LogSource, LogStream, RecentOptions } from '../domain/logs/log-port.ts';
import { DockerEngine, dockerOptions } from './docker-engine.ts';
import { KIND_SERVICE, LABEL } from './docker-labels.ts';
import { DockerDemuxer, LineAssembler, LineBatches } from './log-lines.ts';

/** How long to wait before listening to events again after the stream broke. */
const EVENTS_RETRY_MS = 1000;

/** A line's timestamp as the Engine's `since` takes it: seconds and nanoseconds since the epoch. */
export function dockerSince(ts: string): string {
  return `${Math.floor(Date.parse(`${ts.slice(0, 19)}Z`) / 1000)}.${ts.slice(20, 29)}`;
}

export class DockerLogSource implements LogSource {
  private readonly engine: DockerEngine;
  /** Without a request timeout: follows and the event stream stay quiet for as long as a service does. */
  private readonly streams: Docker;

  constructor(
    host: string | undefined,
    private readonly log: Logger,
    timeoutMs = 15_000,
  ) {
    this.engine = new DockerEngine(host, timeoutMs);
    this.streams = new Docker(dockerOptions(host, 0));
  }

  async replicas(): Promise<LogReplica[]> {
    return this.list([`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`]);
  }

  async serviceReplicas(ref: WorkloadRef): Promise<LogReplica[]> {
    return this.list([`${LABEL.managed}=true`, `${LABEL.service}=${ref.serviceId}`]);
  }

  private async list(label: string[]): Promise<LogReplica[]> {
    const containers = await this.engine.call('container list', () => this.engine.docker.listContainers({ all: true, filters: JSON.stringify({ label }) }));
    return (
      containers
        // A cron service's template is never started: it has nothing to say.
        .filter((c) => c.Labels[LABEL.role] !== 'template' && c.Labels[LABEL.service])
        .sort((a, b) => a.Created - b.Created)
        .map((c) => ({
          key: c.Id,
          serviceId: c.Labels[LABEL.service]!,
          deploymentId: c.Labels[LABEL.deployment] ?? null,
          // A cron run is named by when it started.
          replica: c.Labels[LABEL.replica] ?? `run-${c.Created}`,
          running: c.State === 'running',
        }))
    );
  }

  async recent(replica: LogReplica, opts: RecentOptions): Promise<LogLine[]> {
    let body: Buffer;
    try {
      body = await this.engine.call('container logs', () =>
        this.engine.docker.getContainer(replica.key).logs({
          follow: false,
          stdout: true,
          stderr: true,
          timestamps: true,
          tail: opts.tail,
          ...(opts.since ? { since: opts.since.getTime() / 1000 } : {}),
        }),
      );
    } catch (err) {
      // Removed since it was listed (a rollout finished): nothing to show.
      if (/no such container/i.test(String((err as Error).message))) return [];
      throw err;
    }
    const lines: LogLine[] = [];
    const assemblers = this.assemblers(replica, (l) => lines.push(l));
    new DockerDemuxer((stream, payload) => assemblers[stream].entry(payload)).write(body);
    assemblers.stdout.end();
    assemblers.stderr.end();
    return lines.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  }

  follow(replica: LogReplica, after: string | null, signal: AbortSignal): AsyncIterable<LogLine[]> {
    const batches = new LineBatches();
    const assemblers = this.assemblers(replica, batches.push);
    const finish = (err?: unknown) => {
      assemblers.stdout.end();
      assemblers.stderr.end();
      batches.end(err);
    };
    void this.streams
      .getContainer(replica.key)
      .logs({ follow: true, stdout: true, stderr: true, timestamps: true, abortSignal: signal, ...(after ? { since: dockerSince(after) } : {}) })
      .then((body) => {
        const stream = body as NodeJS.ReadableStream & { destroy(): void };
        stream.on('end', () => finish());
        stream.on('close', () => finish());
        stream.on('error', (err: unknown) => finish(signal.aborted ? undefined : err));
        if (signal.aborted) stream.destroy();
        else signal.addEventListener('abort', () => stream.destroy(), { once: true });
        const demux = new DockerDemuxer((s, payload) => assemblers[s].entry(payload));
        stream.on('data', (chunk: Buffer) => {
          demux.write(chunk);
          // The collector reads in batches: while too many wait, the Engine waits too.
          if (!batches.full) return;
          stream.pause();
          batches.room(() => stream.resume());
        });
      })
      .catch((err: unknown) => finish(signal.aborted || isDockerNotFound(err) ? undefined : err));
    return batches;
  }

  watch(started: () => void, signal: AbortSignal): void {
    const listen = () => {
      if (signal.aborted) return;
      const again = () => {
        if (!signal.aborted) setTimeout(listen, EVENTS_RETRY_MS).unref();
      };
      this.streams
        .getEvents({ filters: { type: ['container'], event: ['start'], label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`] } })
        .then((events) => {
          const stream = events as NodeJS.ReadableStream & { destroy(): void };
          signal.addEventListener('abort', () => stream.destroy(), { once: true });
          stream.on('data', () => started());
          stream.on('error', () => undefined);
          stream.on('close', again);
        }, again);
    };
    listen();
  }

  private assemblers(replica: LogReplica, emit: (l: LogLine) => void): Record<LogStream, LineAssembler> {
    const labels = { replica: replica.replica, deploymentId: replica.deploymentId };
    return { stdout: new LineAssembler('stdout', labels, emit), stderr: new LineAssembler('stderr', labels, emit) };
  }
}
