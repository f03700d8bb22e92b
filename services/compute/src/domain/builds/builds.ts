// Builds: an image made from a public git repository or an uploaded archive, queued per
// workspace, run by the worker (build-worker.ts) and, unless `deploy` is false, rolled out
// as a new deployment of the service through the ordinary rollout path.
//
// A build is written `queued` (with its event) only once its source is acceptable: the URL
// passed the guard, or the archive was validated and kept. The worker does the rest.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ConflictError, NotFoundError, UnavailableError, isUuid, type Page, type PageRequest } from '@pier/kit';
import { findMutable, findService, type ComputeContext } from '../context.ts';
import { events } from '../events.ts';
import type { Scope, Service } from '../records.ts';
import { FINISHED, type Build, type NewBuild } from './build-store-port.ts';
import type { BuilderPort } from './builder-port.ts';
import { buildPaths, checkRef, type BuildOptions } from './build-input.ts';

export interface GitBuildInput extends BuildOptions {
  repo_url: string;
  ref?: string | null;
}

/** The builder, or a 503 saying what is missing. */
export function builderOf(ctx: ComputeContext): BuilderPort {
  const { builder, unavailableReason } = ctx.builds;
  if (!builder) throw new UnavailableError(unavailableReason ?? 'builds are not available on this cluster', 'builds_unavailable');
  return builder;
}

function buildNotFound(): NotFoundError {
  return new NotFoundError('build not found', 'build_not_found');
}

async function enqueue(ctx: ComputeContext, s: Service, row: Omit<NewBuild, 'service_id' | 'workspace_id' | 'vpc_id'>): Promise<Build> {
  const build = await ctx.builds.store.transaction(async (tx) => {
    const b = await tx.insertBuild({ ...row, service_id: s.id, workspace_id: s.workspace_id, vpc_id: s.vpc_id });
    await tx.writeEvent(events.build(s, b));
    return b;
  });
  ctx.eventsWritten();
  ctx.builds.runner.wake();
  return build;
}

/** POST builds/git: the URL is checked now (a refusal is a 400 naming repo_url) and again when the build fetches it. */
export async function createGitBuild(ctx: ComputeContext, scope: Scope, serviceId: string, input: GitBuildInput): Promise<Build> {
  const s = await findMutable(ctx, scope, serviceId);
  builderOf(ctx);
  const paths = buildPaths(input);
  const ref = input.ref ? checkRef(input.ref) : null;
  const checked = await ctx.builds.urls.check(input.repo_url);
  return enqueue(ctx, s, { source: 'git', repo_url: checked.url.href, ref, ...paths, deploy: input.deploy ?? true });
}

/** POST builds/source-upload: the archive is validated while it streams in, and kept until its build runs. */
export async function createUploadBuild(ctx: ComputeContext, scope: Scope, serviceId: string, input: BuildOptions, archive: Readable): Promise<Build> {
  const s = await findMutable(ctx, scope, serviceId);
  builderOf(ctx);
  const paths = buildPaths(input);
  const id = randomUUID();
  try {
    await ctx.builds.sources.receive(id, archive);
    return await enqueue(ctx, s, { id, source: 'upload', repo_url: null, ref: null, ...paths, deploy: input.deploy ?? true });
  } catch (err) {
    // Nothing refers to the source: without a record it is only clutter.
    await ctx.builds.sources.remove(id).catch(() => undefined);
    throw err;
  }
}

export async function listBuilds(ctx: ComputeContext, scope: Scope, serviceId: string, page: PageRequest): Promise<Page<Build>> {
  const s = await findService(ctx, scope, serviceId);
  return ctx.builds.store.listBuilds(s.id, page);
}

export async function getBuild(ctx: ComputeContext, scope: Scope, serviceId: string, buildId: string): Promise<Build> {
  const s = await findService(ctx, scope, serviceId);
  const b = isUuid(buildId) ? await ctx.builds.store.findBuild(s.id, buildId.toLowerCase()) : undefined;
  if (!b) throw buildNotFound();
  return b;
}

/** The whole log kept so far. */
export async function buildLog(ctx: ComputeContext, scope: Scope, serviceId: string, buildId: string): Promise<{ build: Build; log: string }> {
  const build = await getBuild(ctx, scope, serviceId, buildId);
  const chunks = await ctx.builds.store.readLog(build.id, 0, 1_000_000);
  return { build, log: chunks.map((c) => c.text).join('') };
}

export type BuildFeedItem = { kind: 'log'; text: string } | { kind: 'status'; build: Build };

/**
 * The log from its start, then each new part as the worker stores it, and last the build as
 * it finished. Reads the database (every half second), so it works whoever runs the build.
 */
export async function* followBuild(ctx: ComputeContext, build: Build, signal: AbortSignal, everyMs = 500): AsyncIterable<BuildFeedItem> {
  let seq = 0;
  while (!signal.aborted) {
    // The status first: a build is finished only after its last log chunk was stored.
    const now = (await ctx.builds.store.buildById(build.id)) ?? build;
    for (const c of await ctx.builds.store.readLog(build.id, seq)) {
      seq = c.seq;
      yield { kind: 'log', text: c.text };
    }
    if (FINISHED.includes(now.status)) {
      yield { kind: 'status', build: now };
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, everyMs);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}

/**
 * Cancel: a queued build is cancelled at once; a running one is marked first (so a crash
 * in between still ends it cancelled), then stopped, its image and build containers removed.
 * A finished build is a 409, and so is one already deploying its image.
 */
export async function cancelBuild(ctx: ComputeContext, scope: Scope, serviceId: string, buildId: string): Promise<Build> {
  const found = await getBuild(ctx, scope, serviceId, buildId);
  const { store } = ctx.builds;
  const service = (await ctx.store.serviceById(found.service_id))!;
  const marked = await store.transaction(async (tx) => {
    const b = (await tx.lockBuild(found.id))!;
    if (FINISHED.includes(b.status)) throw new ConflictError(`the build already finished (${b.status})`, 'build_finished');
    if (b.image) throw new ConflictError('the build finished and its image is being deployed', 'build_deploying');
    if (b.status === 'queued') {
      const cancelled = await tx.updateBuild(b.id, { status: 'cancelled', error: 'cancelled before it started', finished_at: ctx.now() });
      await tx.writeEvent(events.build(service, cancelled));
      return cancelled;
    }
    return tx.updateBuild(b.id, { cancel_requested: true });
  });
  ctx.eventsWritten();
  if (marked.status !== 'running') return marked;
  // The worker runs it: it stops the build, removes what it made and records `cancelled`.
  if (!(await ctx.builds.runner.cancel(marked.id))) await finishCancel(ctx, marked, service);
  return (await store.buildById(marked.id))!;
}

/** Ends a running build no worker of this process runs (recovery's case, or a race with it). */
export async function finishCancel(ctx: ComputeContext, build: Build, service: Service): Promise<void> {
  await builderOf(ctx).discard({ buildId: build.id, serviceId: build.service_id, workspaceId: build.workspace_id, vpcId: build.vpc_id });
  await settleBuild(ctx, build.id, service, { status: 'cancelled', error: 'cancelled' });
}

/** Records a build's end with its event, unless it already ended. */
export async function settleBuild(
  ctx: ComputeContext,
  buildId: string,
  service: Service,
  outcome: { status: 'succeeded' | 'failed' | 'cancelled'; error?: string | null; image?: string | null; deployment_id?: string | null },
): Promise<Build | undefined> {
  const settled = await ctx.builds.store.transaction(async (tx) => {
    const b = await tx.lockBuild(buildId);
    if (!b || FINISHED.includes(b.status)) return undefined;
    const after = await tx.updateBuild(buildId, {
      status: outcome.status,
      error: outcome.error ?? null,
      ...(outcome.image !== undefined ? { image: outcome.image } : {}),
      ...(outcome.deployment_id !== undefined ? { deployment_id: outcome.deployment_id } : {}),
      finished_at: ctx.now(),
    });
    await tx.writeEvent(events.build(service, after));
    return after;
  });
  ctx.eventsWritten();
  return settled;
}
