import { randomUUID } from 'node:crypto';
import { AuthenticationError, ConflictError, isUuid, type Page, type PageRequest } from '@pier/kit';
import { inTransaction, type AuthContext } from './context.ts';
import { changingAnswers } from './answer-caches.ts';
import type { VpcRow } from './records.ts';
import { vpcCreated, vpcDeleted } from './events.ts';
import { requireId, vpcNotFound } from './ids.ts';

export function listVpcs(ctx: AuthContext, workspaceId: string, page: PageRequest): Promise<Page<VpcRow>> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  return ctx.store.vpcs.list(ws, page);
}

export function createVpc(ctx: AuthContext, actorId: string, workspaceId: string, name: string): Promise<VpcRow> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  return inTransaction(ctx, async (tx) => {
    const vpc = await tx.vpcs.insert({ id: randomUUID(), workspace_id: ws, name });
    await tx.writeEvent(vpcCreated(ws, vpc.id, name, actorId));
    return vpc;
  });
}

export async function getVpc(ctx: AuthContext, workspaceId: string, vpcId: string): Promise<VpcRow> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  const row = await ctx.store.vpcs.get(ws, requireId(vpcId, 'VPC', 'vpc_not_found'));
  if (!row) throw vpcNotFound();
  return row;
}

/**
 * Deletes an empty VPC. Every configured resource service is asked how much the VPC
 * still holds; any count above zero refuses (409), and a service that cannot be asked
 * refuses too (503), because "could not check" must not read as "empty".
 */
export async function deleteVpc(ctx: AuthContext, actorId: string, workspaceId: string, vpcId: string): Promise<void> {
  const vpc = await getVpc(ctx, workspaceId, vpcId);
  const counts = await ctx.usage.count(vpc.id);
  const busy = Object.entries(counts).filter(([, n]) => n > 0);
  if (busy.length) {
    const what = busy.map(([service, n]) => `${n} ${service} resource${n === 1 ? '' : 's'}`).join(', ');
    throw new ConflictError(`VPC is not empty: it still holds ${what}; delete them first`, 'vpc_not_empty');
  }
  await changingAnswers(ctx, async (tx) => {
    const deleted = await tx.vpcs.delete(vpc.workspace_id, vpc.id);
    if (!deleted) throw vpcNotFound();
    await tx.writeEvent(vpcDeleted(vpc.workspace_id, vpc.id, vpc.name, actorId));
  });
}

/**
 * Answers a resource service asking (gRPC FindVpc), on a caller's behalf, whether a VPC
 * is one of the caller's workspace: the caller's identity token (auth's own, verified
 * here) names the workspace, so no service can ask about a workspace its caller is not in.
 */
export async function findVpc(ctx: AuthContext, identityToken: string, vpcId: string): Promise<boolean> {
  const identity = await ctx.identities.verify(identityToken);
  if (identity.kind !== 'user' || !identity.workspaceId) throw new AuthenticationError('an identity issued for a workspace is required', 'unauthenticated');
  if (!isUuid(vpcId)) return false;
  return (await ctx.store.vpcs.get(identity.workspaceId, vpcId.toLowerCase())) !== undefined;
}
