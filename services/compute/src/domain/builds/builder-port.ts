// What builds need from the outside: a builder that turns a source into an image on the
// cluster (cluster/docker-builds.ts, cluster/kubernetes-builds.ts), a place that keeps
// uploaded sources until their build runs (store/source-archives.ts), and the guard that
// checks a repository URL (kit's UrlGuard). The domain defines them; adapters implement them.
import type { Readable } from 'node:stream';
import type { CheckedUrl } from '@pier/kit';

/** Which build, of which service, in which VPC. */
export interface BuildTarget {
  buildId: string;
  serviceId: string;
  workspaceId: string;
  vpcId: string;
}

export type BuildSource =
  /** A public repository: fetched with its URL checked again and the connection pinned to the checked address. */
  | { kind: 'git'; repoUrl: string; ref: string | null }
  /** An uploaded archive, validated and unpacked into `dir`. */
  | { kind: 'upload'; dir: string };

export interface BuildRequest extends BuildTarget {
  source: BuildSource;
  /** Relative to the source's root, normalised (`.` is the root). */
  contextDir: string;
  /** Relative to the source's root. */
  dockerfilePath: string;
  /** The image to make (BuilderPort.imageFor). */
  image: string;
}

export interface BuildIo {
  /** Aborted on cancel, timeout or shutdown: the build stops at once and leaves nothing. */
  signal: AbortSignal;
  /** Output, as it comes (clone progress, build steps). */
  log(text: string): void;
  /** The commit a git source was fetched at. */
  fetched(commitSha: string): void;
}

export interface BuilderPort {
  readonly kind: 'docker' | 'kubernetes';
  /** Kubernetes Jobs go on while compute restarts (reattached); a Docker build dies with its connection. */
  readonly survivesRestart: boolean;
  /** The image reference a build of this service makes (Kubernetes: the tag it pushes). */
  imageFor(target: BuildTarget): string;
  /**
   * Runs the build to its end and resolves when the image exists: with the reference the
   * service's deployments must use when it is not `req.image` (Kubernetes: the pushed tag with
   * its digest, `...:<build>@sha256:...`, so a deployment runs exactly what this build pushed;
   * Docker: nothing, its local tag is the image). Throws BuildFailedError for the build's own
   * failure (a refused URL, a clone, a Dockerfile or a push that fails) and UnavailableError
   * when the cluster cannot be reached.
   */
  run(req: BuildRequest, io: BuildIo): Promise<string | void>;
  /**
   * Follows a build a previous process started: the image as run() answers it (a reference,
   * or true for `req.image`); false when there is none to follow.
   */
  reattach(req: BuildRequest, io: BuildIo): Promise<string | boolean>;
  /** Whether the build's image exists (it finished before a crash). */
  hasImage(target: BuildTarget): Promise<boolean>;
  /** Removes what a build made or left: its image, build containers or Job. Idempotent. */
  discard(target: BuildTarget): Promise<void>;
}

/** The build itself failed: its message is the build's `error`. */
export class BuildFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildFailedError';
  }
}

/** Where uploaded sources wait for their build. */
export interface SourceArchives {
  /**
   * Validates an archive (a tar, gzip-compressed or not) as it streams in and unpacks it for build `buildId`: InputError
   * (`invalid_archive`) for a file that is not an archive or holds paths escaping its root,
   * links pointing outside it or devices; the stream's own error (a 413) passes through.
   */
  receive(buildId: string, body: Readable): Promise<void>;
  /** Where build `buildId`'s source was unpacked. */
  dir(buildId: string): string;
  has(buildId: string): Promise<boolean>;
  remove(buildId: string): Promise<void>;
  /** Builds whose kept source was last written before `before` (an upload in flight is younger). */
  stale(before: Date): Promise<string[]>;
}

/** Checks a URL a caller chose before anything fetches it (kit's UrlGuard). */
export interface UrlChecker {
  check(raw: string): Promise<CheckedUrl>;
}
