// What builds need from compute's schema: the build records (a queue, in order of creation),
// their logs, and the deployment a build made. The domain defines it; store/build-store.ts
// implements it with knex. Kept apart from store-port.ts: builds are their own use case.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Deployment } from '../records.ts';

export const BUILD_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];
export const FINISHED: readonly BuildStatus[] = ['succeeded', 'failed', 'cancelled'];

export const BUILD_SOURCES = ['git', 'upload'] as const;
export type BuildSourceKind = (typeof BUILD_SOURCES)[number];

export interface Build {
  id: string;
  service_id: string;
  workspace_id: string;
  vpc_id: string;
  source: BuildSourceKind;
  status: BuildStatus;
  repo_url: string | null;
  ref: string | null;
  commit_sha: string | null;
  dockerfile_path: string;
  context_dir: string;
  /** The built image, once it exists (a running build with an image is deploying it). */
  image: string | null;
  deploy: boolean;
  deployment_id: string | null;
  error: string | null;
  /** A cancel was asked for and not yet carried out (a crash between the two finishes it). */
  cancel_requested: boolean;
  /** Bytes of log kept so far. */
  log_bytes: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface NewBuild {
  id?: string;
  service_id: string;
  workspace_id: string;
  vpc_id: string;
  source: BuildSourceKind;
  repo_url: string | null;
  ref: string | null;
  dockerfile_path: string;
  context_dir: string;
  deploy: boolean;
}

export type BuildPatch = Partial<
  Pick<Build, 'status' | 'commit_sha' | 'image' | 'deployment_id' | 'error' | 'cancel_requested' | 'started_at' | 'finished_at'>
>;

export interface BuildLogChunk {
  seq: number;
  text: string;
}

export interface BuildStore {
  transaction<T>(fn: (tx: BuildStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  insertBuild(row: NewBuild): Promise<Build>;
  findBuild(serviceId: string, id: string): Promise<Build | undefined>;
  buildById(id: string): Promise<Build | undefined>;
  /** The row with a lock held until the transaction ends. */
  lockBuild(id: string): Promise<Build | undefined>;
  /** Newest first. */
  listBuilds(serviceId: string, page: PageRequest): Promise<Page<Build>>;
  updateBuild(id: string, patch: BuildPatch): Promise<Build>;
  /** Queued builds, oldest first, across workspaces. */
  queuedBuilds(limit: number): Promise<Build[]>;
  /** Running builds per workspace. */
  runningCounts(): Promise<Map<string, number>>;
  buildsInStatus(status: BuildStatus): Promise<Build[]>;
  /** Ids of every build still queued or running (the others' kept sources may go). */
  activeBuildIds(): Promise<Set<string>>;

  appendLog(buildId: string, chunks: BuildLogChunk[], bytes: number): Promise<void>;
  /** The last chunk's sequence number (0 before the first). */
  lastLogSeq(buildId: string): Promise<number>;
  /** Chunks after `afterSeq`, in order. */
  readLog(buildId: string, afterSeq: number, limit?: number): Promise<BuildLogChunk[]>;

  /** The deployment (pending ones included) that runs `image` for the service, if any. */
  deploymentOfImage(serviceId: string, image: string): Promise<Deployment | undefined>;

  /** Keeps piece `seq` (from 0) of an uploaded archive, as it was received. */
  putSourcePart(buildId: string, seq: number, part: Uint8Array): Promise<void>;
  /** The kept archive's pieces, in order (none: nothing kept). */
  sourceParts(buildId: string): AsyncIterable<Uint8Array>;
  deleteSource(buildId: string): Promise<void>;
  /** Builds whose kept archive was last written before `before` (an upload in flight is younger). */
  staleSources(before: Date): Promise<string[]>;
}
