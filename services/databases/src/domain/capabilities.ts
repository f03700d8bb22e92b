import type { Engine } from './database.ts';

/** What a cluster adapter can run for one engine; provisioning is validated against it. */
export interface EngineCapabilities {
  /** Accepted values of `postgres_version` / `mysql_version`. */
  versions: readonly string[];
  defaultVersion: string;
  /** Human name of the server that runs, for messages ("PostgreSQL", "MariaDB"). */
  server: string;
  /**
   * Bounds of `replicas`: read replicas for postgresql, cluster members for mysql.
   * `shrinks`: whether a running database's count may go down (MOCO only adds instances).
   */
  replicas: { min: number; max: number; default: number; shrinks: boolean };
}

export interface ClusterCapabilities {
  adapter: 'docker' | 'kubernetes';
  engines: Record<Engine, EngineCapabilities>;
  /** Whether `storage_gb` becomes a real size limit on this adapter. */
  enforcesStorage: boolean;
}

/** Bounds of `storage_gb` (the spec leaves them to us). */
export const STORAGE_GB = { min: 1, max: 1024, default: 10 } as const;
