// Everything the build use cases and their worker work with, as one field of the context.
import type { BuildStore } from './build-store-port.ts';
import type { BuilderPort, SourceArchives, UrlChecker } from './builder-port.ts';

export interface BuildSettings {
  /** Builds running at once in one workspace; the others wait in the queue, in order. */
  concurrencyPerWorkspace: number;
  /** A build (source fetch included) still running after this long fails with a timeout. */
  timeoutMs: number;
  /** Largest uploaded archive, in bytes. */
  uploadLimitBytes: number;
  /** Log kept per build; the rest is dropped with a note. */
  logLimitBytes: number;
}

/** The worker, as the use cases see it: whichever instance of compute runs the queue. */
export interface BuildRunner {
  /** Whether this instance runs the queue now (an upload received elsewhere goes to it through the store). */
  readonly leading: boolean;
  /** Has the queue looked at now rather than at its next pass. */
  wake(): void;
  /**
   * Stops a running build (its cancel already recorded): true once it settled here; false
   * when another instance runs it, which has been told (the caller waits for the record).
   */
  cancel(buildId: string): Promise<boolean>;
}

export interface BuildDeps {
  store: BuildStore;
  /** Null when the cluster cannot build (kubernetes without a registry configured): builds answer 503. */
  builder: BuilderPort | null;
  /** Why `builder` is null, for the 503. */
  unavailableReason?: string;
  sources: SourceArchives;
  urls: UrlChecker;
  settings: BuildSettings;
  /** Set once the worker exists (server.ts). */
  runner: BuildRunner;
}
