import type { EventActor, NewEvent, StoredEvent } from './records.ts';

/** An event as the API, the stream and webhooks show it. */
export interface EventView {
  id: string;
  type: string;
  occurred_at: string;
  workspace_id: string;
  vpc_id: string | null;
  resource: { kind: string; id: string; name: string | null };
  actor: EventActor | null;
  source_ip: string | null;
  data: Record<string, unknown>;
}

export function eventView(e: StoredEvent | NewEvent): EventView {
  return {
    id: e.id,
    type: e.type,
    occurred_at: e.occurredAt.toISOString(),
    workspace_id: e.workspaceId ?? '',
    vpc_id: e.vpcId,
    resource: e.resource,
    actor: e.actor,
    source_ip: e.sourceIp,
    data: e.data,
  };
}
