// What secrets records and hands between its use cases: names only. A secret's values
// exist only in the cluster's secret store (cluster-port.ts), never here.

export type SecretState = 'creating' | 'ready' | 'deleting';

/** A secret as Pier records it: names only. Its values exist only in the cluster's store. */
export interface SecretRecord {
  id: string;
  workspaceId: string;
  vpcId: string;
  name: string;
  /** Key names, sorted. */
  keys: string[];
  state: SecretState;
  createdAt: Date;
  updatedAt: Date;
}

/** The workspace and VPC a request is about; every query is confined to it. */
export interface Scope {
  workspaceId: string;
  vpcId: string;
}

/** One value a service's environment asks for: a key of a secret. */
export interface SecretReference {
  secretId: string;
  key: string;
}

export type MissingReason = 'secret_not_found' | 'key_not_found';

export interface MissingReference extends SecretReference {
  reason: MissingReason;
}

export interface ResolvedReference extends SecretReference {
  value: string;
}
