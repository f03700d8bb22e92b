// What the API reads: `ready` records only (a pending one is invisible), never values.
import { isUuid, type Page, type PageRequest } from '@pier/kit';
import { secretNotFound, type SecretsContext } from './context.ts';
import type { Scope, SecretRecord } from './records.ts';

export function listSecrets(ctx: SecretsContext, scope: Scope, page: PageRequest): Promise<Page<SecretRecord>> {
  return ctx.store.list(scope, page);
}

export async function getSecret(ctx: SecretsContext, scope: Scope, id: string): Promise<SecretRecord> {
  const record = isUuid(id) ? await ctx.store.get(scope, id) : undefined;
  if (!record) throw secretNotFound();
  return record;
}

/** Records of the VPC in any state, for auth's "is this VPC empty": a pending one still occupies it. */
export function countSecrets(ctx: SecretsContext, vpcId: string): Promise<number> {
  return ctx.store.countInVpc(vpcId);
}
