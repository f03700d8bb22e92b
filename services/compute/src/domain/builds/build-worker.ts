// The build queue's worker: background work on kit's Periodic, poked when a build is queued.
// Each pass starts queued builds, oldest first, while their workspace runs fewer than the
// limit. A build runs in steps that each leave a record to resume from:
//
//   queued -> running (claimed, with its event) -> builder.run -> image recorded
//          -> rollout of the image (deploy) -> succeeded with the deployment
//
// A failure, a timeout or a cancel removes what the build made (image, build containers or
// Job) before the record says failed/cancelled. At start-up, builds a previous process left
// `running` are finished: cancelled if a cancel was asked; deployed if the image exists; followed
// again where the cluster keeps building without us (Kubernetes); otherwise failed with the
// reason. None stays `running` forever.
//
// One instance of compute runs the queue (leaderOnly in server.ts: the claim, the limits, the
// timeouts and the recovery above all assume one runner). A request that queues or cancels a
// build on another instance pokes this one (server.ts, over PostgreSQL's NOTIFY); a cancel
// whose poke was lost is still seen here, as the record's `cancel_requested`, at the next pass.
import { Readable } from 'node:stream';
import { Periodic, UnavailableError, crashPoint, runAsPlatform, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { Service } from '../records.ts';
import type { Build } from './build-store-port.ts';
import { BuildFailedError, type BuildRequest, type BuildTarget } from './builder-port.ts';
import type { BuildRunner } from './build-deps.ts';
import { BuildLogWriter } from './build-log.ts';
import { events } from '../events.ts';
import { rollout } from '../services/rollouts.ts';
import { builderOf, settleBuild } from './builds.ts';

/** Why a running build was stopped from outside. */
class StopReason {
  constructor(readonly why: 'cancel' | 'timeout' | 'shutdown') {}
}

interface Running {
  controller: AbortController;
  done: Promise<void>;
  /** From here on a cancel no longer stops it: its image is being deployed. */
  deploying: boolean;
}

export function targetOfBuild(b: Build): BuildTarget {
  return { buildId: b.id, serviceId: b.service_id, workspaceId: b.workspace_id, vpcId: b.vpc_id };
}

/** An upload younger than this may be a request still streaming in, not yet recorded. */
const SOURCE_GRACE_MS = 3_600_000;

const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`);

export class BuildWorker implements BuildRunner {
  private readonly loop: Periodic;
  private readonly running = new Map<string, Running>();
  private passing?: Promise<void>;
  private again = false;
  /** Not started (another instance leads the queue) or stopping: a wake does nothing. */
  private stopping = true;
  private passes = 0;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.pass(), intervalMs, { log, what: 'build queue pass' });
  }

  start(): void {
    this.stopping = false;
    this.loop.start(() => this.recover().then(() => this.pass()));
  }

  /** Stops taking builds; the running ones stop too (Docker's fail, Kubernetes Jobs are left to be followed again). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    await this.passing;
    for (const r of this.running.values()) if (!r.deploying) r.controller.abort(new StopReason('shutdown'));
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  /** Whether this process runs the queue now. */
  get leading(): boolean {
    return !this.stopping;
  }

  wake(): void {
    if (this.stopping) return;
    // The queue's work is the platform's (a build's events name no actor), even when a request woke it.
    void runAsPlatform(() => this.pass()).catch((err: unknown) => this.log.warn({ err: String(err) }, 'build queue pass failed; the next one retries'));
  }

  async cancel(buildId: string): Promise<boolean> {
    const r = this.running.get(buildId);
    if (!r) return false;
    if (!r.deploying) r.controller.abort(new StopReason('cancel'));
    await r.done;
    return true;
  }

  /** Starts what the queue and the limits allow. Passes never overlap: a wake during one asks for another. */
  pass(): Promise<void> {
    if (this.passing) {
      this.again = true;
      return this.passing;
    }
    this.passing = (async () => {
      try {
        do {
          this.again = false;
          await this.honourCancels();
          await this.startQueued();
        } while (this.again && !this.stopping);
        if (++this.passes % 60 === 0) await this.sweepSources();
      } finally {
        this.passing = undefined;
      }
    })();
    return this.passing;
  }

  /** Builds running here whose cancel was asked through another instance, its poke lost or not yet here. */
  private async honourCancels(): Promise<void> {
    if (this.running.size === 0) return;
    for (const b of await this.ctx.builds.store.buildsInStatus('running')) {
      const r = this.running.get(b.id);
      if (b.cancel_requested && r && !r.deploying) r.controller.abort(new StopReason('cancel'));
    }
  }

  private async startQueued(): Promise<void> {
    if (this.stopping || !this.ctx.builds.builder) return;
    const { store, settings } = this.ctx.builds;
    const counts = await store.runningCounts();
    for (const b of await store.queuedBuilds(500)) {
      if (this.stopping) return;
      const n = counts.get(b.workspace_id) ?? 0;
      if (n >= settings.concurrencyPerWorkspace) continue;
      const claimed = await this.claim(b);
      if (!claimed) continue;
      counts.set(b.workspace_id, n + 1);
      this.launch(claimed.build, claimed.service);
    }
  }

  /** queued -> running, with its event; a build whose service went away fails instead. */
  private async claim(b: Build): Promise<{ build: Build; service: Service } | undefined> {
    const service = await this.ctx.store.serviceById(b.service_id);
    const claimed = await this.ctx.builds.store.transaction(async (tx) => {
      const current = await tx.lockBuild(b.id);
      if (current?.status !== 'queued') return undefined;
      if (!service || service.deleted_at || service.status === 'deleting') {
        const failed = await tx.updateBuild(b.id, { status: 'failed', error: 'the service was deleted before the build started', finished_at: this.ctx.now() });
        if (service) await tx.writeEvent(events.build(service, failed));
        return undefined;
      }
      const started = await tx.updateBuild(b.id, { status: 'running', started_at: this.ctx.now() });
      await tx.writeEvent(events.build(service, started));
      return started;
    });
    this.ctx.eventsWritten();
    return claimed && service ? { build: claimed, service } : undefined;
  }

  private launch(build: Build, service: Service, mode: 'run' | 'reattach' = 'run'): void {
    const controller = new AbortController();
    const entry: Running = { controller, deploying: false, done: Promise.resolve() };
    this.running.set(build.id, entry);
    entry.done = this.execute(build, service, mode, entry)
      .catch((err: unknown) => this.log.error({ err, build: build.id }, 'a build could not be recorded; recovery finishes it at the next start'))
      .finally(() => this.running.delete(build.id));
  }

  private requestOf(b: Build): BuildRequest {
    const target = targetOfBuild(b);
    return {
      ...target,
      source: b.source === 'git' ? { kind: 'git', repoUrl: b.repo_url!, ref: b.ref } : { kind: 'upload', dir: this.ctx.builds.sources.dir(b.id) },
      contextDir: b.context_dir,
      dockerfilePath: b.dockerfile_path,
      image: builderOf(this.ctx).imageFor(target),
    };
  }

  private async execute(build: Build, service: Service, mode: 'run' | 'reattach', entry: Running): Promise<void> {
    const { store, settings } = this.ctx.builds;
    const builder = builderOf(this.ctx);
    const { signal } = entry.controller;
    const startedAt = build.started_at ? new Date(build.started_at).getTime() : Date.now();
    const timer = setTimeout(() => entry.controller.abort(new StopReason('timeout')), Math.max(0, startedAt + settings.timeoutMs - Date.now()));
    const logs = new BuildLogWriter(store, build.id, await store.lastLogSeq(build.id), build.log_bytes, settings.logLimitBytes, this.log);
    const req = this.requestOf(build);
    let image = build.image;
    try {
      if (!image) {
        const io = {
          signal,
          log: (text: string) => logs.write(text),
          fetched: (sha: string) => void store.updateBuild(build.id, { commit_sha: sha }).catch(() => undefined),
        };
        if (build.source === 'upload' && mode === 'run' && !(await this.ctx.builds.sources.has(build.id))) await this.fetchSource(build.id);
        const built = mode === 'reattach' ? await builder.reattach(req, io) : await builder.run(req, io);
        if (built === false) throw new BuildFailedError('compute restarted while this build ran and the build could not be followed again; start it again');
        crashPoint('compute.build.built');
        if (signal.aborted) throw signal.reason;
        // Kubernetes answers the pushed reference with its digest: that, not the tag, is deployed.
        image = typeof built === 'string' ? built : req.image;
        await store.updateBuild(build.id, { image });
      }
      let deploymentId: string | null = null;
      if (build.deploy) {
        entry.deploying = true;
        if (signal.aborted && !(signal.reason instanceof StopReason && signal.reason.why === 'shutdown')) throw signal.reason;
        deploymentId = await this.deploy(build, image);
        logs.write(`\n[pier] deployed ${image} as deployment ${deploymentId}\n`);
      }
      await logs.flush();
      await settleBuild(this.ctx, build.id, service, { status: 'succeeded', image, deployment_id: deploymentId });
      this.log.info({ build: build.id, service: service.id, image, deployment: deploymentId }, 'build succeeded');
    } catch (err) {
      const reason: unknown = signal.aborted ? signal.reason : undefined;
      if (reason instanceof StopReason && reason.why === 'shutdown' && builder.survivesRestart && !entry.deploying) {
        // The cluster keeps building; the next process follows it again.
        await logs.flush();
        return;
      }
      const cancelled = (reason instanceof StopReason && reason.why === 'cancel') || (await store.buildById(build.id))?.cancel_requested === true;
      const error = cancelled ? 'cancelled' : this.failureOf(err, reason);
      logs.write(`\n[pier] ${cancelled ? 'cancelled' : `failed: ${error}`}\n`);
      await builder
        .discard(targetOfBuild(build))
        .catch((e: unknown) => this.log.warn({ err: String(e), build: build.id }, 'what a build left could not be removed'));
      await logs.flush();
      await settleBuild(this.ctx, build.id, service, { status: cancelled ? 'cancelled' : 'failed', error, image: null });
      this.log.info({ build: build.id, service: service.id, status: cancelled ? 'cancelled' : 'failed', error }, 'build ended');
    } finally {
      clearTimeout(timer);
      if (build.source === 'upload') {
        await this.ctx.builds.sources.remove(build.id).catch(() => undefined);
        await store.deleteSource(build.id).catch(() => undefined);
      }
    }
  }

  /** An upload another instance received (or this one before a restart): unpacked from the store, checked as it was then. */
  private async fetchSource(buildId: string): Promise<void> {
    const { sources, store } = this.ctx.builds;
    try {
      await sources.receive(buildId, Readable.from(store.sourceParts(buildId), { objectMode: false }));
    } catch (err) {
      await sources.remove(buildId).catch(() => undefined);
      this.log.warn({ err: String(err), build: buildId }, 'the uploaded source could not be had from the store');
      throw new BuildFailedError("the uploaded source is gone (compute's work directory was emptied); upload it again");
    }
  }

  private failureOf(err: unknown, reason: unknown): string {
    if (reason instanceof StopReason && reason.why === 'timeout')
      return `timed out: the build ran longer than the limit of ${minutes(this.ctx.builds.settings.timeoutMs)}`;
    if (reason instanceof StopReason && reason.why === 'shutdown') return 'compute stopped while this build ran; start it again';
    if (err instanceof BuildFailedError) return err.message;
    if (err instanceof UnavailableError) return `the cluster could not be reached: ${err.message}`;
    this.log.error({ err }, 'a build failed unexpectedly');
    return `internal error: ${err instanceof Error ? err.message : String(err)}`;
  }

  /**
   * A new deployment of the built image, through the ordinary rollout. Idempotent: the image
   * name is the build's own (its id is the tag, also in front of a Kubernetes digest, which two
   * builds of the same content may share), so a deployment of it (even one a crash left pending, which the
   * reconciler finishes) is this build's, and is not made twice.
   */
  private deploy(build: Build, image: string): Promise<string> {
    return this.ctx.locks.run(build.service_id, async () => {
      const existing = await this.ctx.builds.store.deploymentOfImage(build.service_id, image);
      if (existing) return existing.id;
      const s = await this.ctx.store.serviceById(build.service_id);
      if (!s || !s.provisioned || s.deleted_at || s.status === 'deleting')
        throw new BuildFailedError('the service was deleted before its build could be deployed');
      const env = await this.ctx.store.listEnv(s.id);
      const result = await rollout(this.ctx, s, { reason: 'deploy', image, config: s, env });
      crashPoint('compute.build.deployed');
      return result.deployment.id;
    });
  }

  /** Builds a previous process left running: none stays running forever. */
  async recover(): Promise<void> {
    if (!this.ctx.builds.builder) return;
    const builder = this.ctx.builds.builder;
    for (const b of await this.ctx.builds.store.buildsInStatus('running')) {
      if (this.running.has(b.id)) continue;
      const service = await this.ctx.store.serviceById(b.service_id);
      if (!service) continue;
      if (b.cancel_requested && !b.image) {
        await builder.discard(targetOfBuild(b));
        await settleBuild(this.ctx, b.id, service, { status: 'cancelled', error: 'cancelled', image: null });
        continue;
      }
      if (b.image) {
        this.launch(b, service);
        continue;
      }
      if (builder.survivesRestart) {
        this.launch(b, service, 'reattach');
        continue;
      }
      if (await builder.hasImage(targetOfBuild(b))) {
        // It finished just before the crash: take the image and go on from there.
        this.launch(await this.ctx.builds.store.updateBuild(b.id, { image: builder.imageFor(targetOfBuild(b)) }), service);
        continue;
      }
      await builder.discard(targetOfBuild(b));
      await settleBuild(this.ctx, b.id, service, {
        status: 'failed',
        error: `compute restarted while this build ran (a ${builder.kind} build stops with the process that drives it); start it again`,
        image: null,
      });
      this.log.info({ build: b.id }, 'failed a build a previous process left running');
    }
    await this.sweepSources();
  }

  /** Uploaded sources (here and in the store) whose build is over, or was never recorded (a crash during the upload), are removed. */
  private async sweepSources(): Promise<void> {
    const { store, sources } = this.ctx.builds;
    const active = await store.activeBuildIds();
    const before = new Date(this.ctx.now().getTime() - SOURCE_GRACE_MS);
    for (const id of await sources.stale(before)) if (!active.has(id) && !this.running.has(id)) await sources.remove(id);
    for (const id of await store.staleSources(before)) if (!active.has(id) && !this.running.has(id)) await store.deleteSource(id);
  }
}
