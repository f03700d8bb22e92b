// A rollout: one new deployment of a service reaching the cluster. Create (with an image),
// deploy, restart, rollback, env and configuration changes are all rollouts.
//
// The order is what keeps the database honest: the deployment row is written *pending*
// first (invisible to clients), then the cluster is asked, then one transaction makes
// the outcome visible — the deployment, the service's new configuration/environment, its
// status and the events. An unreachable cluster deletes the pending row (503, nothing
// written); a crash in between leaves the pending row, which recovery finishes.
import { crashPoint } from '@pier/kit';
import { WorkloadRejectedError } from '../cluster-port.ts';
import { MissingSecretError } from '../env/secrets-port.ts';
import { events } from '../events.ts';
import { referencesOf, type EnvEntry } from '../env/env-input.ts';
import type { ServiceConfig } from './service-config.ts';
import type { Deployment, Service } from '../records.ts';
import { transitionalStatus, type DeploymentReason } from './status.ts';
import { scopeOf, specOf, type ComputeContext } from '../context.ts';
import { rolloutReplicas } from '../elastic/elastic-controller.ts';

export interface RolloutRequest {
  reason: DeploymentReason;
  image: string;
  config: ServiceConfig;
  env: EnvEntry[];
  rollbackOf?: string | null;
  /** The env's references were checked just now (PUT env): skip checking them again. */
  referencesChecked?: boolean;
}

export interface RolloutResult {
  service: Service;
  deployment: Deployment;
}

/** Turns a cluster or secrets failure into the deployment's failure message, or rethrows what is not one. */
function failureOf(err: unknown): string {
  if (err instanceof MissingSecretError) return `missing secret: ${err.message}`;
  if (err instanceof WorkloadRejectedError) return err.message;
  throw err;
}

export async function rollout(ctx: ComputeContext, service: Service, req: RolloutRequest): Promise<RolloutResult> {
  let failure: string | null = null;
  const refs = referencesOf(req.env);
  if (refs.length && !req.referencesChecked) {
    // Unreachable secrets service: UnavailableError, before anything is written.
    const problems = await ctx.secrets.check(scopeOf(service), refs);
    if (problems.length) failure = failureOf(new MissingSecretError(problems));
  }

  const pending = await ctx.store.insertDeployment({
    service_id: service.id,
    image: req.image,
    reason: req.reason,
    rollback_of: req.rollbackOf ?? null,
    config: req.config,
    env: req.env,
  });
  if (failure === null) {
    try {
      await ctx.cluster.apply(specOf({ ...service, desired_replicas: rolloutReplicas(ctx, req.config) }, pending));
    } catch (err) {
      try {
        failure = failureOf(err);
      } catch (fatal) {
        await ctx.store.deleteDeployment(pending.id);
        throw fatal;
      }
    }
  }
  // The cluster runs it, the records do not have it yet: recovery applies it again and commits.
  if (failure === null) crashPoint('compute.rollout.applied');
  const result = await commitRollout(ctx, pending, failure);
  ctx.eventsWritten();
  // Becoming elastic or not moves its route to the activator or off it.
  if (result.service.desired_replicas !== (service.desired_replicas ?? null)) ctx.edge.syncer.poke();
  // Committed `deploying`, the client not answered: the reconciler settles it running.
  crashPoint('compute.rollout.committed');
  return result;
}

/**
 * Makes a deployment that the cluster accepted (or that failed before reaching it)
 * visible, with everything it changes. Also how recovery finishes a pending one.
 */
export async function commitRollout(ctx: ComputeContext, pending: Deployment, failure: string | null): Promise<RolloutResult> {
  return ctx.store.transaction(async (tx) => {
    const before = await tx.lockService(pending.service_id);
    if (!before) throw new Error(`service ${pending.service_id} vanished during a rollout`);
    const now = ctx.now();
    await tx.updateDeployment(pending.id, {
      status: failure === null ? 'deploying' : 'failed',
      message: failure,
      applied: failure === null,
      finished_at: failure === null ? null : now,
    });
    await tx.supersedeRollouts(pending.service_id, pending.id);

    // A deploy or rollback makes the image it ran the service's image (the repository the
    // next bare tag goes on); other rollouts keep the configured one.
    const movesImage = pending.reason === 'deploy' || pending.reason === 'rollback' || pending.reason === 'create';
    const patch: Partial<Service> = {
      ...pending.config,
      image: movesImage ? pending.image : pending.config.image,
      current_deployment_id: pending.id,
      // Every rollout starts an elastic service awake, at its floor: the new version is proven.
      desired_replicas: rolloutReplicas(ctx, pending.config),
      status: failure === null ? transitionalStatus(pending.reason) : 'crashed',
      status_message: failure,
    };
    if (!before.provisioned) patch.provisioned = true;
    const changedFields = (Object.keys(pending.config) as (keyof ServiceConfig)[]).filter(
      (k) => JSON.stringify(before[k]) !== JSON.stringify(pending.config[k]),
    );
    const service = await tx.updateService(pending.service_id, patch);

    const currentEnv = await tx.listEnv(service.id);
    const strip = (e: EnvEntry[]) =>
      JSON.stringify(e.map((v) => ('secret_id' in v ? { key: v.key, secret_id: v.secret_id, secret_key: v.secret_key } : { key: v.key, value: v.value })));
    if (strip(currentEnv) !== strip(pending.env)) {
      await tx.replaceEnv(service.id, pending.env);
      await tx.writeEvent(
        events.envUpdated(
          service,
          pending.env.map((e) => e.key),
        ),
      );
    }

    const deployment = (await tx.findDeployment(service.id, pending.id))!;
    if (!before.provisioned) await tx.writeEvent(events.created(service));
    else if (changedFields.length) await tx.writeEvent(events.updated(service, changedFields));
    await tx.writeEvent(events.deploymentRequested(service, deployment));
    if (before.status !== service.status) await tx.writeEvent(events.statusChanged(service, before.status, service.status, service.status_message));
    if (failure !== null) await tx.writeEvent(events.deploymentFinished(service, deployment.id, 'failed', failure));
    return { service, deployment };
  });
}

/**
 * Finishes a rollout a crash left pending (the reconciler, holding the service's lock):
 * re-applies it (apply is idempotent) and commits it; one whose service is gone is
 * dropped. False when a request of this process settled it meanwhile.
 */
export async function finishPendingRollout(ctx: ComputeContext, d: Deployment): Promise<boolean> {
  // Re-read under the lock: a request of this process may have settled it meanwhile.
  if ((await ctx.store.deploymentById(d.id))?.status !== 'pending') return false;
  const service = await ctx.store.serviceById(d.service_id);
  if (!service || !service.provisioned || service.deleted_at || service.status === 'deleting') {
    await ctx.store.deleteDeployment(d.id);
    return true;
  }
  let failure: string | null = null;
  try {
    await ctx.cluster.apply(specOf({ ...service, desired_replicas: rolloutReplicas(ctx, d.config) }, d));
  } catch (err) {
    failure = failureOf(err);
  }
  await commitRollout(ctx, d, failure);
  ctx.eventsWritten();
  ctx.log.info({ service: service.id, deployment: d.id }, 'finished a rollout left pending');
  return true;
}
