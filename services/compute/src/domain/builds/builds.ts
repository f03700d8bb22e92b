// Builds: an image made from a public git repository or an uploaded archive, queued per
// workspace, run by the worker (build-worker.ts) and, unless `deploy` is false, rolled out
// as a new deployment of the service through the ordinary rollout path.
//
// A build is written `queued` (with its event) only once its source is acceptable: the URL
// passed the guard, or the archive was validated and kept. The worker does the rest.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { ConflictError, NotFoundError, UnavailableError, isUuid, type Page, type PageRequest } from '@pier/kit';
import { findMutable, findService, type ComputeContext } from '../context.ts';
import { events } from '../events.ts';
import type { Scope, Service } from '../records.ts';
import { FINISHED, type Build, type BuildStore, type NewBuild } from './build-store-port.ts';
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

/**
 * POST builds/source-upload: the archive is validated while it streams in, and kept until its
 * build runs: unpacked here, and as it was received in the store, for the instance of compute
 * that runs the queue when it is another one (which unpacks it, checked again, on its side).
 */
export async function createUploadBuild(ctx: ComputeContext, scope: Scope, serviceId: string, input: BuildOptions, archive: Readable): Promise<Build> {
  const s = await findMutable(ctx, scope, serviceId);
  builderOf(ctx);
  const paths = buildPaths(input);
  const id = randomUUID();
  const kept = keptInStore(ctx.builds.store, id, archive);
  let build: Build;
  try {
    await ctx.builds.sources.receive(id, kept.stream);
    await kept.finish();
    build = await enqueue(ctx, s, { id, source: 'upload', repo_url: null, ref: null, ...paths, deploy: input.deploy ?? true });
  } catch (err) {
    // Nothing refers to the source: without a record it is only clutter.
    await ctx.builds.sources.remove(id).catch(() => undefined);
    await ctx.builds.store.deleteSource(id).catch(() => undefined);
    throw err;
  }
  // Another instance runs the queue: it takes the source from the store.
  if (!ctx.builds.runner.leading) await ctx.builds.sources.remove(id).catch(() => undefined);
  return build;
}

/** Pieces an uploaded archive is kept in, in the store. */
const SOURCE_PART_BYTES = 1024 * 1024;

/** The archive as it streams in, each piece read also written to the store (`finish` writes the last). */
function keptInStore(store: BuildStore, buildId: string, archive: Readable): { stream: Readable; finish(): Promise<void> } {
  let held: Buffer[] = [];
  let size = 0;
  let seq = 0;
  const finish = async () => {
    if (size === 0) return;
    const part = Buffer.concat(held);
    held = [];
    size = 0;
    await store.putSourcePart(buildId, seq++, part);
  };
  async function* pieces(): AsyncGenerator<Buffer> {
    for await (const chunk of archive) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      held.push(b);
      size += b.length;
      if (size >= SOURCE_PART_BYTES) await finish();
      yield b;
    }
  }
  return { stream: Readable.from(pieces(), { objectMode: false }), finish };
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
    const requested = await tx.updateBuild(b.id, { cancel_requested: true });
    await tx.writeEvent(events.buildCancelRequested(service, requested));
    return requested;
  });
  ctx.eventsWritten();
  if (marked.status !== 'running') return marked;
  // The instance running the queue (this one or another, told by the runner) stops the
  // build, removes what it made and records `cancelled`; one that runs the queue later (a
  // handover, a recovery) finds `cancel_requested` and does the same.
  if (!(await ctx.builds.runner.cancel(marked.id))) return untilSettled(ctx, marked.id, CANCEL_WAIT_MS);
  return (await store.buildById(marked.id))!;
}

/** How long a cancel answered by another instance's worker waits for the build to end before answering `running`. */
const CANCEL_WAIT_MS = 20_000;

/** The build once it is no longer running, or as it is after `ms`. */
async function untilSettled(ctx: ComputeContext, buildId: string, ms: number, everyMs = 100): Promise<Build> {
  const deadline = Date.now() + ms;
  for (;;) {
    const b = (await ctx.builds.store.buildById(buildId))!;
    if (b.status !== 'running' || Date.now() >= deadline) return b;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
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
