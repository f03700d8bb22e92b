import { randomUUID } from 'node:crypto';
import type { AuthStore } from './store-port.ts';
import type { MyWorkspaceRow, VpcRow } from './records.ts';
import type { Page, PageRequest } from '@pier/kit';
import { memberAdded, vpcCreated, workspaceCreated } from './events.ts';
import { requireId, workspaceNotFound } from './ids.ts';

/**
 * Every new workspace gets a VPC named `default`: services, databases and secrets all
 * live in a VPC, so a workspace without one could hold nothing until a second call.
 */
export const DEFAULT_VPC_NAME = 'default';

/** Creates a workspace owned by `userId` with its default VPC, inside `tx`. */
export async function createWorkspaceIn(tx: AuthStore, userId: string, name: string): Promise<{ workspace: MyWorkspaceRow; vpc: VpcRow }> {
  const ws = await tx.workspaces.insert({ id: randomUUID(), name, created_by: userId });
  await tx.members.add(ws.id, userId, 'owner');
  const vpc = await tx.vpcs.insert({ id: randomUUID(), workspace_id: ws.id, name: DEFAULT_VPC_NAME });
  await tx.event(workspaceCreated(ws.id, name, userId));
  await tx.event(memberAdded(ws.id, userId, 'owner', userId));
  await tx.event(vpcCreated(ws.id, vpc.id, vpc.name, userId));
  return { workspace: { ...ws, role: 'owner' }, vpc };
}

export class Workspaces {
  constructor(private readonly store: AuthStore) {}

  create(userId: string, name: string): Promise<{ workspace: MyWorkspaceRow; vpc: VpcRow }> {
    return this.store.transaction((tx) => createWorkspaceIn(tx, userId, name));
  }

  async list(userId: string, page: PageRequest): Promise<Page<MyWorkspaceRow>> {
    return this.store.workspaces.listForUser(userId, page);
  }

  async get(userId: string, workspaceId: string): Promise<MyWorkspaceRow> {
    const row = await this.store.workspaces.getForUser(requireId(workspaceId, 'workspace', 'workspace_not_found'), userId);
    if (!row) throw workspaceNotFound();
    return row;
  }
}
