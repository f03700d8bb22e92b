// Deploy, restart, rollback and the deployment history.
import { ConflictError, NotFoundError, isUuid, type Page, type PageRequest } from '@pier/kit';
import { resolveImage } from './image-reference.ts';
import type { Deployment, Scope, Service } from '../records.ts';
import { rollout, type RolloutResult } from './rollouts.ts';
import { findMutable, findService, type ComputeContext } from '../context.ts';

async function currentDeployment(ctx: ComputeContext, s: Service): Promise<Deployment | undefined> {
  if (!s.current_deployment_id) return undefined;
  return (await ctx.store.deploymentsByIds([s.current_deployment_id])).get(s.current_deployment_id);
}

/** Runs `fn` on the service under its lock, with the service re-read inside it. */
async function locked<T>(ctx: ComputeContext, scope: Scope, id: string, fn: (s: Service) => Promise<T>): Promise<T> {
  const found = await findMutable(ctx, scope, id);
  return ctx.locks.run(found.id, async () => fn(await findMutable(ctx, scope, id)));
}

/** Deploy: returns once the cluster accepted the rollout; the status says when it lands. */
export function deploy(ctx: ComputeContext, scope: Scope, id: string, imageTag: string): Promise<RolloutResult> {
  return locked(ctx, scope, id, async (s) => {
    const image = resolveImage(imageTag, s.image);
    const env = await ctx.store.listEnv(s.id);
    return rollout(ctx, s, { reason: 'deploy', image, config: s, env });
  });
}

/** Restart: the same image and settings, new containers. */
export function restart(ctx: ComputeContext, scope: Scope, id: string): Promise<RolloutResult> {
  return locked(ctx, scope, id, async (s) => {
    const current = await currentDeployment(ctx, s);
    if (!current) throw new ConflictError('the service has not been deployed yet; deploy an image first', 'not_deployed');
    const env = await ctx.store.listEnv(s.id);
    return rollout(ctx, s, { reason: 'restart', image: current.image, config: s, env });
  });
}

/**
 * Rollback: a new deployment running an earlier deployment's image, with the service's
 * current configuration and environment (those are changed with PATCH and PUT env).
 */
export function rollback(ctx: ComputeContext, scope: Scope, id: string, deploymentId: string): Promise<RolloutResult> {
  return locked(ctx, scope, id, async (s) => {
    const target = isUuid(deploymentId) ? await ctx.store.findDeployment(s.id, deploymentId.toLowerCase()) : undefined;
    if (!target) throw new NotFoundError("deployment not found in this service's history", 'deployment_not_found');
    const env = await ctx.store.listEnv(s.id);
    return rollout(ctx, s, { reason: 'rollback', image: target.image, config: s, env, rollbackOf: target.id });
  });
}

export async function listDeployments(ctx: ComputeContext, scope: Scope, id: string, page: PageRequest): Promise<Page<Deployment>> {
  const s = await findService(ctx, scope, id);
  return ctx.store.listDeployments(s.id, page);
}
