// The environment editor: the full list in, a rollout out. References are checked with
// the secrets service first; their values never come here.
import { InputError, NotFoundError, isUuid } from '@pier/kit';
import { events } from '../events.ts';
import { describeProblem, entriesFromPut, referencesOf, type EnvEntry, type PutEnvInput } from './env-input.ts';
import type { Deployment, EnvVar, Scope, Service } from '../records.ts';
import { rollout } from '../services/rollouts.ts';
import { findMutable, findService, scopeOf, type ComputeContext } from '../context.ts';

export async function getEnv(ctx: ComputeContext, scope: Scope, id: string): Promise<EnvVar[]> {
  const s = await findService(ctx, scope, id);
  if (s.deleted_at) throw new NotFoundError('service not found', 'service_not_found');
  return ctx.store.listEnv(s.id);
}

export interface EnvResult {
  variables: EnvVar[];
  /** The rollout the change started; null when the service has never been deployed. */
  deployment: Deployment | null;
}

export async function putEnv(ctx: ComputeContext, scope: Scope, id: string, input: PutEnvInput): Promise<EnvResult> {
  const entries = entriesFromPut(input);
  const found = await findMutable(ctx, scope, id);
  return ctx.locks.run(found.id, async () => applyEnv(ctx, await findMutable(ctx, scope, id), entries));
}

export async function deleteEnvVar(ctx: ComputeContext, scope: Scope, id: string, envVarId: string): Promise<EnvResult> {
  const found = await findMutable(ctx, scope, id);
  return ctx.locks.run(found.id, async () => {
    const s = await findMutable(ctx, scope, id);
    const current = await ctx.store.listEnv(s.id);
    const gone = isUuid(envVarId) ? current.find((v) => v.id === envVarId.toLowerCase()) : undefined;
    if (!gone) throw new NotFoundError('environment variable not found', 'env_var_not_found');
    // The remaining references were accepted before; if one has since stopped resolving,
    // the rollout fails on it (crashed, with the missing secret named) rather than here.
    return applyEnv(ctx, s, current.filter((v) => v.id !== gone.id).map(withoutId), { checkReferences: false });
  });
}

function withoutId(v: EnvVar): EnvEntry {
  return 'secret_id' in v ? { key: v.key, secret_id: v.secret_id, secret_key: v.secret_key } : { key: v.key, value: v.value };
}

async function applyEnv(ctx: ComputeContext, s: Service, entries: EnvEntry[], opts = { checkReferences: true }): Promise<EnvResult> {
  const refs = referencesOf(entries);
  if (opts.checkReferences && refs.length) {
    const problems = await ctx.secrets.check(scopeOf(s), refs);
    const first = problems[0];
    if (first) {
      const { field, message } = describeProblem(entries, first);
      throw new InputError(`${field}: ${message}`, first.reason, { field });
    }
  }
  const current = s.current_deployment_id ? (await ctx.store.deploymentsByIds([s.current_deployment_id])).get(s.current_deployment_id) : undefined;
  if (current) {
    const result = await rollout(ctx, s, { reason: 'env', image: current.image, config: s, env: entries, referencesChecked: opts.checkReferences });
    return { variables: await ctx.store.listEnv(s.id), deployment: result.deployment };
  }
  // Never deployed: the list is kept for the first deploy.
  const variables = await ctx.store.transaction(async (tx) => {
    const saved = await tx.replaceEnv(s.id, entries);
    await tx.writeEvent(
      events.envUpdated(
        s,
        entries.map((e) => e.key),
      ),
    );
    return saved;
  });
  ctx.eventsWritten();
  return { variables, deployment: null };
}
