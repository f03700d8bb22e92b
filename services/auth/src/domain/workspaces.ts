import { randomUUID } from 'node:crypto';
import type { Page, PageRequest } from '@pier/kit';
import { inTransaction, type AuthContext } from './context.ts';
import type { AuthStore } from './store-port.ts';
import type { MyWorkspaceRow, VpcRow } from './records.ts';
import { memberAdded, vpcCreated, workspaceCreated } from './events.ts';
import { requireId, workspaceNotFound } from './ids.ts';

/**
 * Every new workspace gets a VPC named `default`: services, databases and secrets all
 * live in a VPC, so a workspace without one could hold nothing until a second call.
 */
export const DEFAULT_VPC_NAME = 'default';

/** Creates a workspace owned by `userId` with its default VPC, inside `tx` (bootstrap shares it). */
export async function createWorkspaceIn(tx: AuthStore, userId: string, name: string): Promise<{ workspace: MyWorkspaceRow; vpc: VpcRow }> {
  const ws = await tx.workspaces.insert({ id: randomUUID(), name, created_by: userId });
  await tx.members.add(ws.id, userId, 'owner');
  const vpc = await tx.vpcs.insert({ id: randomUUID(), workspace_id: ws.id, name: DEFAULT_VPC_NAME });
  await tx.writeEvent(workspaceCreated(ws.id, name, userId));
  await tx.writeEvent(memberAdded(ws.id, userId, 'owner', userId));
  await tx.writeEvent(vpcCreated(ws.id, vpc.id, vpc.name, userId));
  return { workspace: { ...ws, role: 'owner' }, vpc };
}

export function createWorkspace(ctx: AuthContext, userId: string, name: string): Promise<{ workspace: MyWorkspaceRow; vpc: VpcRow }> {
  return inTransaction(ctx, (tx) => createWorkspaceIn(tx, userId, name));
}

export function listWorkspaces(ctx: AuthContext, userId: string, page: PageRequest): Promise<Page<MyWorkspaceRow>> {
  return ctx.store.workspaces.listForUser(userId, page);
}

export async function getWorkspace(ctx: AuthContext, userId: string, workspaceId: string): Promise<MyWorkspaceRow> {
  const row = await ctx.store.workspaces.getForUser(requireId(workspaceId, 'workspace', 'workspace_not_found'), userId);
  if (!row) throw workspaceNotFound();
  return row;
}
