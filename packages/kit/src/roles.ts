import { ForbiddenError } from './errors.ts';

export const roles = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof roles)[number];

/** Route requirement as the spec's endpoint tables say it: any member, or Owner/Admin. */
export type Requirement = 'Member' | 'Admin';

export function satisfies(role: Role, requirement: Requirement): boolean {
  if (requirement === 'Member') return true;
  return role === 'owner' || role === 'admin';
}

export function requireRole(role: Role | undefined, requirement: Requirement): void {
  if (!role || !satisfies(role, requirement)) throw new ForbiddenError();
}
