import type { PierEvent } from '@pier/kit';

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

// Events say what happened to which secret; they never carry values.
export function createdEvent(r: SecretRecord): PierEvent {
  return {
    kind: 'secret.created',
    workspaceId: r.workspaceId,
    vpcId: r.vpcId,
    resourceId: r.id,
    data: { id: r.id, name: r.name, keys: r.keys },
  };
}

export function deletedEvent(r: SecretRecord): PierEvent {
  return {
    kind: 'secret.deleted',
    workspaceId: r.workspaceId,
    vpcId: r.vpcId,
    resourceId: r.id,
    data: { id: r.id, name: r.name },
  };
}
