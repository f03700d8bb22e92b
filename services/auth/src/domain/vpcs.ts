import { randomUUID } from 'node:crypto';
import { AuthenticationError, ConflictError, isUuid, type Identity, type Page, type PageRequest } from '@pier/kit';
import type { AuthStore, VpcRecords } from './store-port.ts';
import { changingAnswers, type AnswerCaches } from './answer-caches.ts';
import type { VpcRow } from './records.ts';
import { vpcCreated, vpcDeleted } from './events.ts';
import { requireId, vpcNotFound } from './ids.ts';

/** How many live resources each resource service holds in a VPC. */
export interface VpcUsage {
  /** Per service name; throws UnavailableError when a service cannot be asked. */
  count(vpcId: string): Promise<Record<string, number>>;
}

export class Vpcs {
  constructor(
    private readonly store: AuthStore,
    private readonly usage: VpcUsage,
    private readonly caches: AnswerCaches,
  ) {}

  async list(workspaceId: string, page: PageRequest): Promise<Page<VpcRow>> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    return this.store.vpcs.list(ws, page);
  }

  create(actorId: string, workspaceId: string, name: string): Promise<VpcRow> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    return this.store.transaction(async (tx) => {
      const vpc = await tx.vpcs.insert({ id: randomUUID(), workspace_id: ws, name });
      await tx.event(vpcCreated(ws, vpc.id, name, actorId));
      return vpc;
    });
  }

  async get(workspaceId: string, vpcId: string): Promise<VpcRow> {
    const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
    const row = await this.store.vpcs.get(ws, requireId(vpcId, 'VPC', 'vpc_not_found'));
    if (!row) throw vpcNotFound();
    return row;
  }

  /**
   * Deletes an empty VPC. Every configured resource service is asked how much the VPC
   * still holds; any count above zero refuses (409), and a service that cannot be asked
   * refuses too (503), because "could not check" must not read as "empty".
   */
  async delete(actorId: string, workspaceId: string, vpcId: string): Promise<void> {
    const vpc = await this.get(workspaceId, vpcId);
    const counts = await this.usage.count(vpc.id);
    const busy = Object.entries(counts).filter(([, n]) => n > 0);
    if (busy.length) {
      const what = busy.map(([service, n]) => `${n} ${service} resource${n === 1 ? '' : 's'}`).join(', ');
      throw new ConflictError(`VPC is not empty: it still holds ${what}; delete them first`, 'vpc_not_empty');
    }
    await changingAnswers(this.store, this.caches, async (tx) => {
      const deleted = await tx.vpcs.delete(vpc.workspace_id, vpc.id);
      if (!deleted) throw vpcNotFound();
      await tx.event(vpcDeleted(vpc.workspace_id, vpc.id, vpc.name, actorId));
    });
  }
}

/**
 * Answers a resource service asking, on a caller's behalf, whether a VPC is one of the
 * caller's workspace: the caller's identity token (auth's own, verified here) names the
 * workspace, so no service can ask about a workspace its caller is not in.
 */
export class VpcLookup {
  constructor(
    private readonly vpcs: VpcRecords,
    private readonly verifier: { verify(token: string | undefined): Promise<Identity> },
  ) {}

  async find(identityToken: string, vpcId: string): Promise<boolean> {
    const identity = await this.verifier.verify(identityToken);
    if (identity.kind !== 'user' || !identity.workspaceId) throw new AuthenticationError('an identity issued for a workspace is required', 'unauthenticated');
    if (!isUuid(vpcId)) return false;
    return (await this.vpcs.get(identity.workspaceId, vpcId.toLowerCase())) !== undefined;
  }
}
