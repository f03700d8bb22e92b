import { ConflictError, ForbiddenError, type Role, type Page, type PageRequest } from '@pier/kit';
import { inTransaction, type AuthContext } from './context.ts';
import type { AuthStore } from './store-port.ts';
import { changingAnswers } from './answer-caches.ts';
import type { MemberRow } from './records.ts';
import { memberAdded, memberRemoved, memberRoleChanged } from './events.ts';
import { memberNotFound, requireId, workspaceNotFound } from './ids.ts';
import { checkMembershipChange } from './membership-rules.ts';

/** Role changes and removals alter Authenticate answers (answer-caches.ts). */
const CHANGES_ANSWERS = true;

export function listMembers(ctx: AuthContext, workspaceId: string, page: PageRequest): Promise<Page<MemberRow>> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  return ctx.store.members.list(ws, page);
}

/** Adds the user with this e-mail (created when unknown) to the workspace. */
export function addMember(ctx: AuthContext, actorId: string, workspaceId: string, email: string, role: Role): Promise<MemberRow> {
  // A new member only turns refusals into answers, and refusals are never cached.
  return inLockedWorkspace(ctx, actorId, workspaceId, !CHANGES_ANSWERS, async (tx, actorRole) => {
    checkMembershipChange(actorRole, null, role, 0);
    const user = await tx.users.findOrCreate(email);
    if (!(await tx.members.add(workspaceId, user.id, role))) {
      throw new ConflictError(`${user.email} is already a member of this workspace`, 'already_exists');
    }
    await tx.writeEvent(memberAdded(workspaceId, user.id, role, actorId));
    return (await tx.members.get(workspaceId, user.id))!;
  });
}

export function changeMemberRole(ctx: AuthContext, actorId: string, workspaceId: string, userId: string, role: Role): Promise<MemberRow> {
  const target = requireId(userId, 'member', 'member_not_found');
  return inLockedWorkspace(ctx, actorId, workspaceId, CHANGES_ANSWERS, async (tx, actorRole) => {
    const member = await tx.members.get(workspaceId, target);
    if (!member) throw memberNotFound();
    if (member.role === role) return member;
    checkMembershipChange(actorRole, member.role, role, await tx.members.countOwners(workspaceId));
    await tx.members.setRole(workspaceId, target, role);
    await tx.writeEvent(memberRoleChanged(workspaceId, target, member.role, role, actorId));
    return { ...member, role };
  });
}

export function removeMember(ctx: AuthContext, actorId: string, workspaceId: string, userId: string): Promise<void> {
  const target = requireId(userId, 'member', 'member_not_found');
  return inLockedWorkspace(ctx, actorId, workspaceId, CHANGES_ANSWERS, async (tx, actorRole) => {
    const member = await tx.members.get(workspaceId, target);
    if (!member) throw memberNotFound();
    checkMembershipChange(actorRole, member.role, null, await tx.members.countOwners(workspaceId));
    await tx.members.remove(workspaceId, target);
    await tx.writeEvent(memberRemoved(workspaceId, target, member.role, actorId));
  });
}

/**
 * Runs a membership change with the workspace locked, judging the actor by their role
 * as it stands inside that lock rather than by the identity token, which can be
 * seconds old.
 */
function inLockedWorkspace<T>(
  ctx: AuthContext,
  actorId: string,
  workspaceId: string,
  changesAnswers: boolean,
  fn: (tx: AuthStore, actorRole: Role) => Promise<T>,
): Promise<T> {
  const ws = requireId(workspaceId, 'workspace', 'workspace_not_found');
  const body = async (tx: AuthStore): Promise<T> => {
    if (!(await tx.workspaces.lock(ws))) throw workspaceNotFound();
    const actor = await tx.members.get(ws, actorId);
    if (!actor) throw workspaceNotFound();
    if (actor.role !== 'owner' && actor.role !== 'admin') throw new ForbiddenError();
    return fn(tx, actor.role);
  };
  return changesAnswers ? changingAnswers(ctx, body) : inTransaction(ctx, body);
}
