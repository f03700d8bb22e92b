// Compute's questions over gRPC: do these references resolve in this VPC, and to what
// values. Only `ready` records count; the values come from the cluster's store.
import { NotFoundError, UnavailableError } from '@pier/kit';
import type { SecretValues } from './cluster-port.ts';
import type { SecretsContext } from './context.ts';
import type { MissingReference, ResolvedReference, Scope, SecretRecord, SecretReference } from './records.ts';

const READ_CONCURRENCY = 8;

/** The references that do not resolve in this VPC: unknown secret, or a key it lacks. */
export async function checkReferences(ctx: SecretsContext, scope: Scope, refs: SecretReference[]): Promise<MissingReference[]> {
  const found = await recordsById(ctx, scope, refs);
  return missingOf(refs, found);
}

/**
 * The values of the references, read from the cluster's store. Any reference that does
 * not resolve fails the whole call, naming each: a container must not start half-configured.
 */
export async function resolveReferences(ctx: SecretsContext, scope: Scope, refs: SecretReference[]): Promise<ResolvedReference[]> {
  const found = await recordsById(ctx, scope, refs);
  const missing = missingOf(refs, found);
  const values = new Map<string, SecretValues | undefined>();
  const ids = [...found.keys()];
  // A few reads at a time: a container start waits on all of them.
  for (let i = 0; i < ids.length; i += READ_CONCURRENCY) {
    await Promise.all(
      ids.slice(i, i + READ_CONCURRENCY).map(async (id) => {
        try {
          values.set(id, await ctx.cluster.read({ vpcId: scope.vpcId, secretId: id }));
        } catch (err) {
          ctx.log.warn({ secretId: id, cause: ctx.cluster.describeError(err) }, 'secret store read failed');
          throw new UnavailableError("the cluster's secret store cannot be reached", 'cluster_unavailable');
        }
      }),
    );
  }
  const resolved: ResolvedReference[] = [];
  for (const ref of refs) {
    if (missing.some((m) => m.secretId === ref.secretId && m.key === ref.key)) continue;
    // The store may differ from our record (edited out of band): trust only its own keys.
    const held = values.get(ref.secretId);
    const value = held && Object.hasOwn(held, ref.key) ? held[ref.key] : undefined;
    if (typeof value !== 'string') missing.push({ ...ref, reason: held ? 'key_not_found' : 'secret_not_found' });
    else resolved.push({ ...ref, value });
  }
  if (missing.length > 0) throw missingSecretError(missing);
  return resolved;
}

async function recordsById(ctx: SecretsContext, scope: Scope, refs: SecretReference[]): Promise<Map<string, SecretRecord>> {
  const ids = [...new Set(refs.map((r) => r.secretId))];
  const records = await ctx.store.findReady(scope, ids);
  return new Map(records.map((r) => [r.id, r]));
}

function missingOf(refs: SecretReference[], found: Map<string, SecretRecord>): MissingReference[] {
  const missing: MissingReference[] = [];
  for (const ref of refs) {
    const record = found.get(ref.secretId);
    if (!record) missing.push({ ...ref, reason: 'secret_not_found' });
    else if (!record.keys.includes(ref.key)) missing.push({ ...ref, reason: 'key_not_found' });
  }
  return missing;
}

function missingSecretError(missing: MissingReference[]): NotFoundError {
  const parts = missing.map((m) => (m.reason === 'secret_not_found' ? `secret ${m.secretId} does not exist` : `secret ${m.secretId} has no key ${m.key}`));
  return new NotFoundError(`missing secret: ${parts.join('; ')}`, 'missing_secret');
}
