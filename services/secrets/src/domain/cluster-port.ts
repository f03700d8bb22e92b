// What the secrets service needs from the cluster's secret store, where the values live
// (the domain defines it; cluster/docker.ts and cluster/kubernetes.ts implement it), in
// crossplane's managed-resource terms: `observe` says whether the object exists, `apply`
// and `delete` are idempotent, so a retry after a crash is always safe.

/** Secret values: environment variable name -> value. Never logged, never stored by us. */
export type SecretValues = Record<string, string>;

/** Addresses one secret's object in the store; objects are named by secret id. */
export interface SecretObjectId {
  vpcId: string;
  secretId: string;
}

/** What `apply` writes beside the values, so the object can be traced back to Pier. */
export interface SecretObjectRef extends SecretObjectId {
  workspaceId: string;
  name: string;
}

export interface Observation {
  exists: boolean;
  /** Key names held by the object (never the values). Empty when it does not exist. */
  keys: string[];
}

export interface SecretsCluster {
  readonly kind: 'docker' | 'kubernetes';
  /** Answers when the store can be used (readiness); throws otherwise. */
  ping(): Promise<void>;
  observe(id: SecretObjectId): Promise<Observation>;
  /** Creates or replaces the object with exactly these values. */
  apply(ref: SecretObjectRef, values: SecretValues): Promise<void>;
  /** The values, or undefined when the object does not exist. */
  read(id: SecretObjectId): Promise<SecretValues | undefined>;
  /** Removes the object; removing a missing object succeeds. */
  delete(id: SecretObjectId): Promise<void>;
  /** Every object this store holds for Pier, so ones whose record is gone can be swept. */
  list(): Promise<SecretObjectId[]>;
  /**
   * Removes what an interrupted write left beside the objects (the docker store's temporary
   * files) once older than `olderThanMs`; how many. Stores whose writes are atomic have none.
   */
  removeStrays?(olderThanMs: number): Promise<number>;
  /**
   * A short description of one of this store's failures, for logs: never anything the
   * request carried (a Kubernetes error echoes the request body; only its status is kept).
   */
  describeError(err: unknown): string;
}
