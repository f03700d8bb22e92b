import { IDENTITY_HEADER, UnavailableError } from '@pier/kit';
import type { VpcUsage } from '../domain/vpc-usage-port.ts';

export interface UsageTarget {
  /** Service name, used in messages (`compute`, `databases`, `secrets`). */
  service: string;
  baseUrl: string;
}

/**
 * Asks each resource service how much a VPC still holds, through their
 * `GET /internal/vpcs/{vpcID}/usage` (see kit's vpcUsageRoute), with a service identity
 * auth signs for itself. All services are asked at once.
 */
export class HttpVpcUsage implements VpcUsage {
  constructor(
    private readonly targets: UsageTarget[],
    private readonly serviceToken: () => Promise<string>,
    private readonly timeoutMs = 3000,
  ) {}

  async count(vpcId: string): Promise<Record<string, number>> {
    if (this.targets.length === 0) return {};
    const token = await this.serviceToken();
    const counts = await Promise.all(this.targets.map((t) => this.ask(t, vpcId, token)));
    return Object.fromEntries(this.targets.map((t, i) => [t.service, counts[i]!]));
  }

  private async ask(target: UsageTarget, vpcId: string, token: string): Promise<number> {
    const unavailable = (why: string) =>
      new UnavailableError(`cannot delete the VPC now: ${target.service} could not be asked whether it is empty (${why})`, 'upstream_unavailable');
    let res: Response;
    try {
      const url = new URL(`/internal/vpcs/${encodeURIComponent(vpcId)}/usage`, target.baseUrl);
      res = await fetch(url, { headers: { [IDENTITY_HEADER]: token }, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw unavailable((err as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable');
    }
    if (!res.ok) throw unavailable(`answered ${res.status}`);
    const body = (await res.json().catch(() => undefined)) as { count?: unknown } | undefined;
    if (typeof body?.count !== 'number') throw unavailable('answered without a count');
    return body.count;
  }
}
