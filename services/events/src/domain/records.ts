// An event as events stores and serves it: what the outbox wrote (kit's writeEvent), as
// the audit log, the stream and (later) webhooks show it.

export interface EventActor {
  user_id: string;
  email: string | null;
  credential: { kind: 'api_key' | 'cli_session' | 'oidc'; id: string | null; name: string | null } | null;
}

export interface StoredEvent {
  /** Order of storage: a follower resumes after it. */
  seq: number;
  id: string;
  type: string;
  occurredAt: Date;
  workspaceId: string | null;
  vpcId: string | null;
  resource: { kind: string; id: string; name: string | null };
  actor: EventActor | null;
  sourceIp: string | null;
  data: Record<string, unknown>;
}

/** An event to store, as the consumer read it off the stream. */
export type NewEvent = Omit<StoredEvent, 'seq'> & { streamSeq: number | null };

/** What a list or a follow narrows to (all optional; `type` is exact or a prefix). */
export interface EventFilters {
  type?: { exact: string } | { prefix: string };
  resourceId?: string;
  vpcId?: string;
  actor?: string;
  since?: Date;
  until?: Date;
}
