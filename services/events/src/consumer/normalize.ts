import { createHash } from 'node:crypto';
import { isUuid } from '@pier/kit';
import type { EventActor, NewEvent } from '../domain/records.ts';

// What the outbox published (kit's writeEvent payload) as an event to store. Payloads
// written before events had ids, actors and resources (a platform upgraded while events
// were in flight) are stored too: their id is derived from the message id, so a
// redelivery still lands on the same row.

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** A UUID (version 4 layout) made from a hash: the same message always gives the same id. */
function derivedId(from: string): string {
  const h = createHash('sha256').update(from).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function actorOf(v: unknown): EventActor | null {
  if (!v || typeof v !== 'object') return null;
  const a = v as Record<string, unknown>;
  const userId = str(a.user_id);
  if (!userId) return null;
  const c = a.credential && typeof a.credential === 'object' ? (a.credential as Record<string, unknown>) : null;
  const kind = c && (c.kind === 'api_key' || c.kind === 'cli_session' || c.kind === 'oidc') ? c.kind : null;
  return { user_id: userId, email: str(a.email), credential: c && kind ? { kind, id: str(c.id), name: str(c.name) } : null };
}

/**
 * The event a message carries, or null when it is not an event at all (not JSON, no kind):
 * such a message is acknowledged and dropped, never retried for ever.
 */
export function eventOfMessage(body: string, streamSeq: number, msgId: string | undefined): NewEvent | null {
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!p || typeof p !== 'object') return null;
  const type = str(p.kind) ?? str(p.type);
  const resourceId = str(p.resource_id) ?? '';
  if (!type) return null;
  const resource = p.resource && typeof p.resource === 'object' ? (p.resource as Record<string, unknown>) : {};
  const data = p.data && typeof p.data === 'object' && !Array.isArray(p.data) ? (p.data as Record<string, unknown>) : {};
  const occurred = new Date(str(p.occurred_at) ?? Date.now());
  const id = str(p.id) && isUuid(p.id as string) ? (p.id as string).toLowerCase() : derivedId(msgId ?? `stream:${streamSeq}`);
  return {
    id,
    streamSeq,
    type,
    occurredAt: Number.isNaN(occurred.getTime()) ? new Date() : occurred,
    workspaceId: str(p.workspace_id),
    vpcId: str(p.vpc_id),
    resource: {
      kind: str(resource.kind) ?? type.split('.')[0]!,
      id: str(resource.id) ?? resourceId,
      name: str(resource.name) ?? (typeof data.name === 'string' ? data.name : null),
    },
    actor: actorOf(p.actor),
    sourceIp: str(p.source_ip),
    data,
  };
}
