import type { AuthContext } from './context.ts';
import type { CredentialTable } from './authn-port.ts';

/** The row with the newest use this instance has seen but not yet written, so its listings are never behind. */
export function withPendingUse<R extends { id: string; last_used_at: Date | null }>(ctx: AuthContext, table: CredentialTable, r: R): R {
  const pending = ctx.uses.pendingFor(table, r.id);
  return pending && (!r.last_used_at || pending > r.last_used_at) ? { ...r, last_used_at: pending } : r;
}
