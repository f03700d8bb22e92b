import { isUuid, keysetPage, mapPage, writeEvent, type Knex, type Page, type PageRequest, type PierEvent } from '@pier/kit';
import type { Attempt, Delivery, DeliveryState, Webhook, WebhookSecrets } from '../domain/webhook-records.ts';
import type { NewWebhook, WebhookChanges, WebhookStore } from '../domain/webhook-store-port.ts';

interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const WEBHOOK_COLUMNS = ['id', 'workspace_id', 'url', 'events', 'description', 'enabled', 'disabled_reason', 'created_at', 'updated_at'];

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  workspaceId: r.workspace_id,
  url: r.url,
  events: r.events,
  description: r.description,
  enabled: r.enabled,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  event: Record<string, unknown>;
  occurred_at: Date;
  state: DeliveryState;
  attempts_in_round: number;
  next_attempt_at: Date | null;
  created_at: Date;
}

interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  response: string | null;
  error: string | null;
}

const DELIVERY_COLUMNS = ['id', 'webhook_id', 'event_id', 'event_type', 'event', 'occurred_at', 'state', 'attempts_in_round', 'next_attempt_at', 'created_at'];

export class KnexWebhookStore implements WebhookStore {
  constructor(
    private readonly db: Knex,
    /** Called after a commit that wrote events (the relay publishes them now). */
    private readonly eventsWritten: () => void,
  ) {}

  private async withEvent<T>(
    fn: (trx: Knex.Transaction) => Promise<Webhook | undefined>,
    event: (w: Webhook) => PierEvent,
    result: (w: Webhook) => T,
  ): Promise<T | undefined> {
    const out = await this.db.transaction(async (trx) => {
      const w = await fn(trx);
      if (w) await writeEvent(trx, event(w));
      return w;
    });
    if (out) this.eventsWritten();
    return out && result(out);
  }

  async create(w: NewWebhook, event: (w: Webhook) => PierEvent): Promise<Webhook> {
    return (await this.withEvent(
      async (trx) => {
        const [row] = (await trx('webhooks')
          .insert({ workspace_id: w.workspaceId, url: w.url, events: w.events, description: w.description, enabled: w.enabled, secret: w.secret })
          .returning(WEBHOOK_COLUMNS)) as WebhookRow[];
        return toWebhook(row!);
      },
      event,
      (x) => x,
    ))!;
  }

  async get(workspaceId: string, id: string): Promise<Webhook | undefined> {
    if (!isUuid(id)) return undefined;
    const row = (await this.db('webhooks').where({ workspace_id: workspaceId, id }).first(WEBHOOK_COLUMNS)) as WebhookRow | undefined;
    return row && toWebhook(row);
  }

  async list(workspaceId: string, page: PageRequest): Promise<Page<Webhook>> {
    return mapPage(await keysetPage<WebhookRow>(this.db('webhooks').where({ workspace_id: workspaceId }).select(WEBHOOK_COLUMNS), page), toWebhook);
  }

  update(workspaceId: string, id: string, c: WebhookChanges, event: (w: Webhook) => PierEvent): Promise<Webhook | undefined> {
    if (!isUuid(id)) return Promise.resolve(undefined);
    return this.withEvent(
      async (trx) => {
        const set: Record<string, unknown> = { updated_at: trx.fn.now() };
        if (c.url !== undefined) set.url = c.url;
        if (c.events !== undefined) set.events = c.events;
        if (c.description !== undefined) set.description = c.description;
        if (c.enabled !== undefined) set.enabled = c.enabled;
        if (c.enabled === true) set.disabled_reason = null;
        const [row] = (await trx('webhooks').where({ workspace_id: workspaceId, id }).update(set).returning(WEBHOOK_COLUMNS)) as WebhookRow[];
        return row && toWebhook(row);
      },
      event,
      (x) => x,
    );
  }

  async remove(workspaceId: string, id: string, event: (w: Webhook) => PierEvent): Promise<boolean> {
    if (!isUuid(id)) return false;
    const gone = await this.withEvent(
      async (trx) => {
        const [row] = (await trx('webhooks').where({ workspace_id: workspaceId, id }).delete().returning(WEBHOOK_COLUMNS)) as WebhookRow[];
        return row && toWebhook(row);
      },
      event,
      () => true,
    );
    return gone ?? false;
  }

  rotate(workspaceId: string, id: string, secret: string, previousUntil: Date, event: (w: Webhook) => PierEvent): Promise<Webhook | undefined> {
    if (!isUuid(id)) return Promise.resolve(undefined);
    return this.withEvent(
      async (trx) => {
        const [row] = (await trx('webhooks')
          .where({ workspace_id: workspaceId, id })
          .update({ previous_secret: trx.ref('secret'), previous_secret_until: previousUntil, secret, updated_at: trx.fn.now() })
          .returning(WEBHOOK_COLUMNS)) as WebhookRow[];
        return row && toWebhook(row);
      },
      event,
      (x) => x,
    );
  }

  async secrets(id: string): Promise<WebhookSecrets | undefined> {
    const row = (await this.db('webhooks').where({ id }).first('secret', 'previous_secret', 'previous_secret_until')) as
      { secret: string; previous_secret: string | null; previous_secret_until: Date | null } | undefined;
    return row && { secret: row.secret, previous: row.previous_secret, previousUntil: row.previous_secret_until };
  }

  async enqueue(webhookId: string, e: { id: string; type: string; occurredAt: Date; json: Record<string, unknown> }): Promise<Delivery> {
    const [row] = (await this.db('webhook_deliveries')
      .insert({
        webhook_id: webhookId,
        event_id: e.id,
        event_type: e.type,
        event: JSON.stringify(e.json),
        occurred_at: e.occurredAt,
        state: 'pending',
        next_attempt_at: this.db.fn.now(),
      })
      .returning(DELIVERY_COLUMNS)) as DeliveryRow[];
    return (await this.withAttempts([row!]))[0]!;
  }

  async deliveries(webhookId: string, page: PageRequest): Promise<Page<Delivery>> {
    const rows = await keysetPage<DeliveryRow>(this.db('webhook_deliveries').where({ webhook_id: webhookId }).select(DELIVERY_COLUMNS), page, {
      order: 'desc',
    });
    return { items: await this.withAttempts(rows.items), nextCursor: rows.nextCursor };
  }

  async delivery(webhookId: string, deliveryId: string): Promise<Delivery | undefined> {
    if (!isUuid(deliveryId)) return undefined;
    const row = (await this.db('webhook_deliveries').where({ webhook_id: webhookId, id: deliveryId }).first(DELIVERY_COLUMNS)) as DeliveryRow | undefined;
    return row && (await this.withAttempts([row]))[0];
  }

  async redeliver(webhookId: string, deliveryId: string): Promise<Delivery | undefined> {
    if (!isUuid(deliveryId)) return undefined;
    const [row] = (await this.db('webhook_deliveries')
      .where({ webhook_id: webhookId, id: deliveryId })
      .update({ state: 'pending', attempts_in_round: 0, next_attempt_at: this.db.fn.now() })
      .returning(DELIVERY_COLUMNS)) as DeliveryRow[];
    return row && (await this.withAttempts([row]))[0];
  }

  async due(limit: number): Promise<Delivery[]> {
    const rows = (await this.db('webhook_deliveries')
      .where({ state: 'pending' })
      .where('next_attempt_at', '<=', this.db.fn.now())
      .orderBy('next_attempt_at')
      .limit(limit)
      .select(DELIVERY_COLUMNS)) as DeliveryRow[];
    return rows.map((r) => toDelivery(r, []));
  }

  async recordAttempt(deliveryId: string, a: Attempt, next: { state: 'pending'; at: Date } | { state: 'succeeded' | 'failed' }): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('webhook_attempts').insert({
        delivery_id: deliveryId,
        attempted_at: a.at,
        status_code: a.statusCode,
        latency_ms: a.latencyMs,
        response: a.response,
        error: a.error,
      });
      await trx('webhook_deliveries')
        .where({ id: deliveryId })
        .update({ state: next.state, next_attempt_at: next.state === 'pending' ? next.at : null, attempts_in_round: trx.raw('attempts_in_round + 1') });
    });
  }

  async disable(webhookId: string, reason: string, event: (w: Webhook) => PierEvent): Promise<boolean> {
    const done = await this.withEvent(
      async (trx) => {
        const [row] = (await trx('webhooks')
          .where({ id: webhookId, enabled: true })
          .update({ enabled: false, disabled_reason: reason, updated_at: trx.fn.now() })
          .returning(WEBHOOK_COLUMNS)) as WebhookRow[];
        return row && toWebhook(row);
      },
      event,
      () => true,
    );
    return done ?? false;
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<Delivery[]> {
    if (rows.length === 0) return [];
    const attempts = (await this.db('webhook_attempts')
      .whereIn(
        'delivery_id',
        rows.map((r) => r.id),
      )
      .orderBy('id')
      .select('delivery_id', 'attempted_at', 'status_code', 'latency_ms', 'response', 'error')) as AttemptRow[];
    return rows.map((r) =>
      toDelivery(
        r,
        attempts.filter((a) => a.delivery_id === r.id),
      ),
    );
  }
}

function toDelivery(r: DeliveryRow, attempts: AttemptRow[]): Delivery {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    eventId: r.event_id,
    eventType: r.event_type,
    event: r.event,
    occurredAt: r.occurred_at,
    state: r.state,
    attemptsInRound: r.attempts_in_round,
    nextAttemptAt: r.next_attempt_at,
    createdAt: r.created_at,
    attempts: attempts.map((a) => ({ at: a.attempted_at, statusCode: a.status_code, latencyMs: a.latency_ms, response: a.response, error: a.error })),
  };
}
