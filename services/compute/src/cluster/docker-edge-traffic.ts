// The docker edge's requests, for service metrics (domain/metrics): Caddy writes one JSON
// line per request it answers on its stdout (caddy-config.ts's access log, the host, status
// and duration only), and this follows the edge container's output from the collector's
// cursor (the last request it counted) through the Engine API's logs stream, as
// docker-logs.ts follows a replica's.
import Docker from 'dockerode';
import { isDockerNotFound } from '@pier/kit';
import type { EdgeFollower, EdgeRequest, EdgeTrafficPort } from '../domain/metrics/metrics-port.ts';
import { dockerOptions } from './docker-engine.ts';
import { DockerDemuxer } from './log-lines.ts';

/** How far back a follow with no cursor (a first start), or an old one, reads the edge's output. */
const CATCH_UP_MS = 10 * 60_000;

interface AccessLine {
  logger?: string;
  ts?: number;
  status?: number;
  duration?: number;
  request?: { host?: string };
}

/** One line of Caddy's access log as a request; null for anything else. */
export function parseAccessLine(line: string): EdgeRequest | null {
  if (!line.startsWith('{')) return null;
  let l: AccessLine;
  try {
    l = JSON.parse(line) as AccessLine;
  } catch {
    return null;
  }
  if (!l.logger?.startsWith('http.log.access') || typeof l.status !== 'number' || typeof l.duration !== 'number' || !l.request?.host) return null;
  // Caddy logs a request it answered from a handler with no status set as status 0: an empty 200.
  const status = l.status === 0 ? 200 : l.status;
  const host = l.request.host.toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  return { host, status, durationMs: l.duration * 1000, at: typeof l.ts === 'number' ? Math.round(l.ts * 1000) : Date.now() };
}

export class DockerEdgeTraffic implements EdgeTrafficPort {
  /** Without a request timeout: the stream is quiet for as long as the edge is. */
  private readonly docker: Docker;

  constructor(
    host: string | undefined,
    private readonly container: string,
  ) {
    this.docker = new Docker(dockerOptions(host, 0));
  }

  async follow(after: number | null, on: EdgeFollower, signal: AbortSignal): Promise<void> {
    const from = Math.max(after ?? 0, Date.now() - CATCH_UP_MS);
    let body: NodeJS.ReadableStream & { destroy(): void };
    try {
      // A stream opened on a container that is not running ends at once, or never delivers.
      const info = await this.docker.getContainer(this.container).inspect();
      if (!info.State.Running) throw new Error(`the edge container ${this.container} is not running (yet)`);
      body = (await this.docker
        .getContainer(this.container)
        .logs({ follow: true, stdout: true, stderr: false, since: Math.floor(from / 1000), abortSignal: signal })) as unknown as typeof body;
    } catch (err) {
      if (signal.aborted) return;
      if (isDockerNotFound(err)) throw new Error(`the edge container ${this.container} does not exist (yet)`, { cause: err });
      throw err;
    }
    // `since` is in whole seconds: what that second held up to the cursor is skipped here.
    let partial = '';
    const demux = new DockerDemuxer((_stream, payload) => {
      const lines = (partial + payload.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      const batch: EdgeRequest[] = [];
      for (const line of lines) {
        const r = parseAccessLine(line);
        if (r && r.at > from) batch.push(r);
      }
      if (batch.length) on.requests(batch);
    });
    on.opened();
    await new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        body.destroy();
        return resolve();
      }
      signal.addEventListener('abort', () => body.destroy(), { once: true });
      body.on('data', (chunk: Buffer) => demux.write(chunk));
      body.on('end', () => resolve());
      body.on('close', () => resolve());
      body.on('error', (err: unknown) => (signal.aborted ? resolve() : reject(err as Error)));
    });
  }
}
