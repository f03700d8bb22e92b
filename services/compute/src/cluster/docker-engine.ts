import Docker from 'dockerode';
import { clusterUnavailable, dockerFault, dockerReasonOf, dockerStatusOf, isDockerNotFound } from '@pier/kit';
import { WorkloadRejectedError } from '../domain/cluster-port.ts';
import { observed, type ClusterCallObserver } from './call-metrics.ts';

// The Engine API as compute's docker adapter and its cron scheduler both use it: every
// call counted and its failure put in compute's terms.

/** dockerode options for a `unix://` or `tcp://` address. */
export function dockerOptions(host: string | undefined, timeoutMs: number): Docker.DockerOptions {
  const address = host ?? 'unix:///var/run/docker.sock';
  if (address.startsWith('unix://')) return { socketPath: address.slice('unix://'.length), timeout: timeoutMs };
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  return { host: url.hostname, port: Number(url.port || 2375), protocol: 'http', timeout: timeoutMs };
}

/** Engine API failures in our terms: unreachable is the caller's 503; everything else is the workload's. */
export function dockerError(err: unknown, what: string): Error {
  const fault = dockerFault(err);
  if (fault?.kind === 'unreachable')
    return fault.code === 'timeout'
      ? clusterUnavailable(`the cluster did not answer in time (docker ${what})`)
      : clusterUnavailable(`the cluster cannot be reached (docker: ${fault.code})`);
  return new WorkloadRejectedError(`docker ${what}: ${dockerReasonOf(err)}`);
}

export class DockerEngine {
  readonly docker: Docker;
  /** Engine API requests made so far (benchmarks read it; each observeMany reports its own). */
  calls = 0;

  constructor(
    host: string | undefined,
    timeoutMs: number,
    /** Told of each call made through `call` (compute's /metrics). */
    private readonly observe?: ClusterCallObserver,
  ) {
    this.docker = new Docker(dockerOptions(host, timeoutMs));
  }

  /** Every Engine API call goes through here: counted (also on `tally`, one operation's own count), timed, and its failure translated. */
  async call<T>(what: string, fn: () => Promise<T>, tally?: { calls: number }): Promise<T> {
    this.calls++;
    if (tally) tally.calls++;
    try {
      return await observed(this.observe, what, fn);
    } catch (err) {
      throw dockerError(err, what);
    }
  }

  /** Removes a container (its anonymous volumes stay); gone already is the goal too. */
  async removeContainer(id: string): Promise<void> {
    this.calls++;
    try {
      await this.docker.getContainer(id).remove({ force: true, v: false });
    } catch (err) {
      // Gone already, or already being removed by an earlier attempt: both are the goal.
      const code = dockerStatusOf(err);
      if (code !== 404 && code !== 409) throw dockerError(err, 'container remove');
    }
  }

  /** Removes a named volume; a missing one is the goal too. */
  async removeVolume(name: string): Promise<void> {
    this.calls++;
    try {
      await this.docker.getVolume(name).remove();
    } catch (err) {
      if (!isDockerNotFound(err)) throw dockerError(err, 'volume remove');
    }
  }
}
