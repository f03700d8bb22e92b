// Builds on the Docker engine: the source fetched or unpacked in compute (git-source.ts,
// store/source-archives.ts), packed into a tar context (build-context.ts) and handed to the
// Engine's build API — the classic builder, since BuildKit over the API needs a session
// dockerode does not speak. The image is `pier-build/<service id>:<build id>`, which any
// deployment of the service can run. RUN steps get a bridge network of their own with
// inter-container traffic off, never a VPC's; the host firewall (docker-egress-firewall.ts)
// keeps them off the host and off link-local addresses, as it does VPC containers. The
// build API takes no capabilities or security options for the step containers (the engine
// refuses `securityopt` on Linux): they run with Docker's default capabilities. The images
// a Dockerfile starts from are checked before the engine resolves them (dockerfile-images.ts,
// docker-image-access.ts): it would take another team's build, or any image by its ID prefix.
//
// Cancel is the abort of the build request: the engine then kills and removes the step's
// container itself, in its own time; discard() removes it at once, then the tag and the
// layers this build made (found in its output: a cached or base layer is not the build's own).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import Docker from 'dockerode';
import { UnavailableError, crashPoint, dockerStatusOf, isDockerNotFound, type Logger, type UrlGuard } from '@pier/kit';
import { WorkloadRejectedError } from '../domain/cluster-port.ts';
import { BuildFailedError, type BuilderPort, type BuildIo, type BuildRequest, type BuildTarget } from '../domain/builds/builder-port.ts';
import { DockerEngine, dockerOptions } from './docker-engine.ts';
import { packContext, type BuildContext } from './build-context.ts';
import { dockerfileImages } from './dockerfile-images.ts';
import { mayBuildFrom } from './docker-image-access.ts';
import { fetchRepository } from './git-source.ts';
import { LABEL } from './docker-labels.ts';
import { BUILD_BRIDGE, BUILD_NETWORK, EgressFirewall } from './docker-egress-firewall.ts';
export const BUILD_IMAGE_REPOSITORY = 'pier-build';

export interface DockerBuilderOptions {
  host?: string;
  guard: UrlGuard;
  allowHttp: boolean;
  /** Where git sources are fetched to (and removed from after the build). */
  workDir: string;
  /** Memory of a RUN step's container. */
  memoryMiB: number;
  logger: Logger;
  /** pier/netfilter, the host firewall RUN steps wait for (docker-egress-firewall.ts); null: the operator's own. */
  egressFirewallImage?: string | null;
}

/** What one build made on the engine: its step containers and the layers of its own. */
interface Made {
  containers: string[];
  layers: string[];
}

/** Follows the build's output: logs it, notes the containers and layers it made, and remembers its error. */
class BuildOutput {
  private line = '';
  private instruction = '';
  private cached = false;
  error?: string;
  imageId?: string;

  constructor(
    private readonly io: BuildIo,
    private readonly made: Made,
  ) {}

  message(m: { stream?: string; status?: string; progress?: string; error?: string; errorDetail?: { message?: string }; aux?: { ID?: string } }): void {
    if (m.stream) {
      this.io.log(m.stream);
      this.line += m.stream;
      const lines = this.line.split('\n');
      this.line = lines.pop()!;
      for (const l of lines) this.step(l);
    }
    if (m.status) this.io.log(`${m.status}${m.progress ? ` ${m.progress}` : ''}\n`);
    if (m.error) {
      this.error = m.errorDetail?.message ?? m.error;
      this.io.log(`${this.error}\n`);
    }
    if (m.aux?.ID) this.imageId = m.aux.ID;
  }

  private step(l: string): void {
    const step = /^Step \d+\/\d+ : (\w+)/i.exec(l);
    if (step) {
      this.instruction = step[1]!.toUpperCase();
      this.cached = false;
      return;
    }
    if (/^ ---> Using cache/.test(l)) this.cached = true;
    const running = /^ ---> Running in ([0-9a-f]+)/.exec(l);
    if (running) {
      this.made.containers.push(running[1]!);
      crashPoint('compute.build.step-running');
    }
    const layer = /^ ---> ([0-9a-f]{12,64})\s*$/.exec(l);
    if (layer && this.instruction !== 'FROM' && !this.cached) this.made.layers.push(layer[1]!);
  }
}

export class DockerBuilder implements BuilderPort {
  readonly kind = 'docker' as const;
  readonly survivesRestart = false;
  private readonly engine: DockerEngine;
  /** No request timeout: a build step may print nothing for minutes. */
  private readonly streaming: Docker;
  /** What each build made so far, for discard(). */
  private readonly made = new Map<string, Made>();
  private networkReady = false;
  private readonly firewall: EgressFirewall | null;

  constructor(private readonly opts: DockerBuilderOptions) {
    this.engine = new DockerEngine(opts.host, 15_000);
    this.streaming = new Docker(dockerOptions(opts.host, 0));
    this.firewall = EgressFirewall.of(this.engine, opts.egressFirewallImage, opts.logger);
  }

  imageFor(t: BuildTarget): string {
    return `${BUILD_IMAGE_REPOSITORY}/${t.serviceId}:${t.buildId}`;
  }

  async run(req: BuildRequest, io: BuildIo): Promise<void> {
    let sourceRoot: string;
    let fetched: string | undefined;
    if (req.source.kind === 'git') {
      await mkdir(this.opts.workDir, { recursive: true });
      fetched = await mkdtemp(path.join(this.opts.workDir, `git-${req.buildId}-`));
      sourceRoot = path.join(fetched, 'src');
      io.fetched(await fetchRepository(this.opts.guard, this.opts.allowHttp, req.source.repoUrl, req.source.ref, sourceRoot, io));
    } else {
      sourceRoot = req.source.dir;
    }
    try {
      const context = await packContext(sourceRoot, req.contextDir, req.dockerfilePath);
      await this.checkBaseImages(context, req.workspaceId);
      await this.firewall?.ensure();
      await this.ensureNetwork();
      const made: Made = { containers: [], layers: [] };
      this.made.set(req.buildId, made);
      const output = new BuildOutput(io, made);
      const stream = await this.start(req, context, io);
      await new Promise<void>((resolve, reject) => {
        let rest = '';
        stream.on('data', (chunk: Buffer) => {
          const lines = (rest + chunk.toString()).split('\n');
          rest = lines.pop()!;
          for (const line of lines) if (line.trim()) output.message(JSON.parse(line));
        });
        stream.on('end', () => {
          if (rest.trim()) output.message(JSON.parse(rest));
          resolve();
        });
        stream.on('error', (err: Error) =>
          reject(io.signal.aborted ? io.signal.reason : new UnavailableError(`the build stream broke: ${err.message}`, 'cluster_unavailable')),
        );
      });
      if (io.signal.aborted) throw io.signal.reason;
      if (output.error) throw new BuildFailedError(output.error);
      if (!(await this.hasImage(req))) throw new BuildFailedError('the build ended without making an image');
      this.made.delete(req.buildId);
    } finally {
      if (fetched) await rm(fetched, { recursive: true, force: true });
    }
  }

  /** Refuses a Dockerfile that starts from an image the workspace may not use; the context is not read then. */
  private async checkBaseImages(context: BuildContext, workspaceId: string): Promise<void> {
    try {
      for (const image of dockerfileImages(context.dockerfileText)) {
        if (!(await mayBuildFrom(this.engine, image, workspaceId)))
          throw new BuildFailedError(`Dockerfile: image ${image} is not available in the cluster (no such image)`);
      }
    } catch (err) {
      context.tar.destroy();
      throw err;
    }
  }

  private async start(req: BuildRequest, context: BuildContext, io: BuildIo): Promise<NodeJS.ReadableStream> {
    const memory = this.opts.memoryMiB * 1024 * 1024;
    try {
      return await this.engine.call('build', () =>
        this.streaming.buildImage(context.tar, {
          t: req.image,
          dockerfile: context.dockerfile,
          labels: {
            [LABEL.managed]: 'true',
            [LABEL.kind]: 'build',
            [LABEL.service]: req.serviceId,
            [LABEL.workspace]: req.workspaceId,
            'pier.build': req.buildId,
          },
          rm: true,
          forcerm: true,
          networkmode: BUILD_NETWORK,
          memory,
          memswap: memory,
          version: '1',
          abortSignal: io.signal,
        }),
      );
    } catch (err) {
      if (io.signal.aborted) throw io.signal.reason;
      // The engine refused the build itself (no Dockerfile at that path, say): the build's failure.
      if (err instanceof WorkloadRejectedError) throw new BuildFailedError(err.message.replace(/^docker build: /, ''));
      throw err;
    }
  }

  /** The engine cannot follow a build after its client is gone: a restarted compute has nothing to reattach to. */
  async reattach(): Promise<boolean> {
    return false;
  }

  async hasImage(t: BuildTarget): Promise<boolean> {
    try {
      await this.engine.call('image inspect', () => this.engine.docker.getImage(this.imageFor(t)).inspect());
      return true;
    } catch (err) {
      if (err instanceof WorkloadRejectedError && /no such image/i.test(err.message)) return false;
      throw err;
    }
  }

  async discard(t: BuildTarget): Promise<void> {
    const remove = async (ref: string) => {
      try {
        await this.engine.docker.getImage(ref).remove({ force: true });
      } catch (err) {
        // Gone already, or still the parent of an image someone else made: both fine here.
        const code = dockerStatusOf(err);
        if (code !== 404 && code !== 409) throw new UnavailableError(`could not remove image ${ref}: ${(err as Error).message}`, 'cluster_unavailable');
      }
    };
    const made = this.made.get(t.buildId) ?? { containers: [], layers: [] };
    // The engine removes a cancelled step's container itself, but not at once; its layer cannot go before it.
    for (const id of made.containers) await this.removeStepContainer(id);
    await remove(this.imageFor(t));
    for (const layer of [...made.layers].reverse()) await remove(layer);
    this.made.delete(t.buildId);
  }

  /** Removes a step's container and waits until it is gone (the engine may be removing it already). */
  private async removeStepContainer(id: string): Promise<void> {
    await this.engine.removeContainer(id);
    for (let i = 0; i < 100; i++) {
      const gone = await this.engine.docker
        .getContainer(id)
        .inspect()
        .then(
          () => false,
          (err: unknown) => isDockerNotFound(err),
        );
      if (gone) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async ensureNetwork(): Promise<void> {
    if (this.networkReady) return;
    const docker = this.engine.docker;
    try {
      await this.engine.call('network inspect', () => docker.getNetwork(BUILD_NETWORK).inspect());
    } catch {
      try {
        await docker.createNetwork({
          Name: BUILD_NETWORK,
          Driver: 'bridge',
          CheckDuplicate: true,
          // Named, so the host firewall's rules for it hold before the network exists.
          Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': BUILD_BRIDGE },
          Labels: { [LABEL.managed]: 'true', [LABEL.kind]: 'build' },
        });
      } catch (err) {
        if (dockerStatusOf(err) !== 409) throw new UnavailableError(`could not create the build network: ${(err as Error).message}`, 'cluster_unavailable');
      }
    }
    this.networkReady = true;
  }
}
