import { ConflictError, ForbiddenError, type Role } from '@pier/kit';

/**
 * Who may change a membership. Owner or Admin may manage members (the route checks
 * that); on top of it:
 * - only an Owner may grant the Owner role, or change or remove an Owner: an Admin must
 *   not be able to promote themselves past the people who made them Admin;
 * - a workspace always keeps at least one Owner: the last one can be neither removed nor
 *   downgraded (409) — make someone else Owner first.
 *
 * `next` is the new role, or null for removal.
 */
export function checkMembershipChange(actorRole: Role, currentRole: Role | null, next: Role | null, ownerCount: number): void {
  const touchesOwner = currentRole === 'owner' || next === 'owner';
  if (touchesOwner && actorRole !== 'owner') {
    throw new ForbiddenError('only an owner may grant, change or remove the owner role', 'owner_required');
  }
  if (currentRole === 'owner' && next !== 'owner' && ownerCount <= 1) {
    throw new ConflictError(
      next === null
        ? 'the last owner of a workspace cannot be removed; make another member owner first'
        : 'the last owner of a workspace cannot be downgraded; make another member owner first',
      'last_owner',
    );
  }
}
