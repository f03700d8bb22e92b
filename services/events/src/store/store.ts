import { keysetPage, mapPage, readInstallationId, type Knex, type Page, type PageRequest } from '@pier/kit';
import type { EventActor, EventFilters, NewEvent, StoredEvent } from '../domain/records.ts';
import type { EventStore } from '../domain/store-port.ts';
import { eventView } from '../domain/event-view.ts';
import { matches } from '../domain/webhook-rules.ts';

/** The channel an insert notifies: every instance's followers look (store/notifications.ts). */
export const STORED_CHANNEL = 'pier_events_stored';

interface Row {
  seq: string | number;
  id: string;
  type: string;
  occurred_at: Date;
  workspace_id: string | null;
  vpc_id: string | null;
  resource_kind: string;
  resource_id: string;
  resource_name: string | null;
  actor: EventActor | null;
  source_ip: string | null;
  data: Record<string, unknown>;
}

const COLUMNS = ['seq', 'id', 'type', 'occurred_at', 'workspace_id', 'vpc_id', 'resource_kind', 'resource_id', 'resource_name', 'actor', 'source_ip', 'data'];

function toEvent(r: Row): StoredEvent {
  return {
    seq: Number(r.seq),
    id: r.id,
    type: r.type,
    occurredAt: r.occurred_at,
    workspaceId: r.workspace_id,
    vpcId: r.vpc_id,
    resource: { kind: r.resource_kind, id: r.resource_id, name: r.resource_name },
    actor: r.actor,
    sourceIp: r.source_ip,
    data: r.data,
  };
}

/**
 * A delivery to every enabled endpoint of the event's workspace that asked for its type, in
 * the transaction that stores the event: an event stored is an event delivered, at least once.
 */
async function queueDeliveries(trx: Knex.Transaction, events: NewEvent[]): Promise<void> {
  const workspaces = [...new Set(events.map((e) => e.workspaceId).filter((w): w is string => w !== null))];
  if (workspaces.length === 0) return;
  const hooks = (await trx('webhooks').whereIn('workspace_id', workspaces).where({ enabled: true }).select('id', 'workspace_id', 'events')) as {
    id: string;
    workspace_id: string;
    events: string[];
  }[];
  const rows = events.flatMap((e) =>
    hooks
      .filter((h) => h.workspace_id === e.workspaceId && matches(h.events, e.type))
      .map((h) => ({
        webhook_id: h.id,
        event_id: e.id,
        event_type: e.type,
        event: JSON.stringify(eventView(e)),
        occurred_at: e.occurredAt,
        state: 'pending',
        next_attempt_at: trx.fn.now(),
      })),
  );
  if (rows.length > 0) await trx('webhook_deliveries').insert(rows).onConflict(['webhook_id', 'event_id']).ignore();
}

/** Escapes LIKE's wildcards in a type prefix. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function filtered(q: Knex.QueryBuilder, workspaceId: string, f: EventFilters): Knex.QueryBuilder {
  q.where('workspace_id', workspaceId);
  if (f.type && 'exact' in f.type) q.where('type', f.type.exact);
  if (f.type && 'prefix' in f.type) q.whereLike('type', likePrefix(f.type.prefix));
  if (f.resourceId) q.where('resource_id', f.resourceId);
  if (f.vpcId) q.where('vpc_id', f.vpcId);
  if (f.actor) q.where('actor_id', f.actor);
  if (f.since) q.where('occurred_at', '>=', f.since);
  if (f.until) q.where('occurred_at', '<', f.until);
  return q;
}

export class KnexEventStore implements EventStore {
  constructor(private readonly db: Knex) {}

  installationId(): Promise<string> {
    return readInstallationId(this.db);
  }

  /** When this installation's schema was made. */
  async installedAt(): Promise<Date> {
    const row = (await this.db('installation').first('created_at')) as { created_at: Date };
    return row.created_at;
  }

  async insert(events: NewEvent[]): Promise<number> {
    if (events.length === 0) return 0;
    return this.db.transaction(async (trx) => {
      const rows = events.map((e) => ({
        id: e.id,
        stream_seq: e.streamSeq,
        type: e.type,
        occurred_at: e.occurredAt,
        workspace_id: e.workspaceId,
        vpc_id: e.vpcId,
        resource_kind: e.resource.kind,
        resource_id: e.resource.id,
        resource_name: e.resource.name,
        actor: e.actor === null ? null : JSON.stringify(e.actor),
        actor_id: e.actor?.user_id ?? null,
        source_ip: e.sourceIp,
        data: JSON.stringify(e.data),
      }));
      const inserted: { id: string }[] = await trx('events').insert(rows).onConflict('id').ignore().returning('id');
      if (inserted.length === 0) return 0;
      const fresh = new Set(inserted.map((r) => r.id));
      await queueDeliveries(
        trx,
        events.filter((e) => fresh.has(e.id)),
      );
      await trx.raw('select pg_notify(?, ?)', [STORED_CHANNEL, '']);
      return inserted.length;
    });
  }

  async list(workspaceId: string, filters: EventFilters, page: PageRequest): Promise<Page<StoredEvent>> {
    const q = filtered(this.db('events').select(COLUMNS), workspaceId, filters);
    return mapPage(await keysetPage<Row>(q, page, { createdAt: 'occurred_at', order: 'desc' }), toEvent);
  }

  async after(workspaceId: string, filters: EventFilters, seq: number, limit: number): Promise<StoredEvent[]> {
    const rows: Row[] = await filtered(this.db('events').select(COLUMNS), workspaceId, filters).where('seq', '>', seq).orderBy('seq').limit(limit);
    return rows.map(toEvent);
  }

  async seqOf(workspaceId: string, id: string): Promise<number | undefined> {
    const row = await this.db('events').where({ workspace_id: workspaceId, id }).first('seq');
    return row ? Number(row.seq) : undefined;
  }

  async lastSeq(): Promise<number> {
    const row = await this.db('events').max('seq as seq').first();
    return Number(row?.seq ?? 0);
  }

  async trim(cutoff: Date, batch: number): Promise<number> {
    const oldest = this.db('events').where('occurred_at', '<', cutoff).orderBy('occurred_at').limit(batch).select('seq');
    const deleted: number = await this.db('events').whereIn('seq', oldest).delete();
    // Deliveries (and their attempts) past the retention go with their events.
    const finished = this.db('webhook_deliveries').where('created_at', '<', cutoff).whereNot({ state: 'pending' }).limit(batch).select('id');
    await this.db('webhook_deliveries').whereIn('id', finished).delete();
    return deleted;
  }
}
