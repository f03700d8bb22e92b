import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { connect, type NatsConnection } from 'nats';
import { EVENTS_STREAM, ensureEventsStream, eventSubject } from '@pier/kit';
import { startServiceUnderTest, until, type ServiceUnderTest } from '@pier/testing';
import { readConfig, start, type RunningEvents } from '../src/index.ts';

export { until, readEventStream } from '@pier/testing';

export type Harness = ServiceUnderTest<RunningEvents> & {
  base: string;
  /** Deletes a webhook of the harness's workspace, as an admin. */
  delete(webhookId: string): Promise<{ status: number }>;
  /** Publishes an event as a service's outbox relay would; returns its payload. */
  publish(over?: Partial<OutboxPayload>, msgId?: string): Promise<OutboxPayload>;
  /** Waits until the durable consumer exists (it starts from new messages in tests). */
  consumerReady(): Promise<void>;
  close(): Promise<void>;
};

export interface OutboxPayload {
  id: string;
  kind: string;
  workspace_id: string;
  vpc_id: string | null;
  resource_id: string;
  resource: { kind: string; id: string; name: string | null };
  actor: { user_id: string; email: string | null; credential: { kind: string; id: string | null; name: string | null } | null } | null;
  source_ip: string | null;
  data: Record<string, unknown>;
  occurred_at: string;
}

export async function startEvents(env: Record<string, string | undefined> = {}): Promise<Harness> {
  const h = await startServiceUnderTest({
    schema: 'events',
    start: (e, logs) => start(readConfig(e), { logDestination: logs }),
    env: { PIER_EVENTS_HTTP_PORT: '0', PIER_EVENTS_CONSUME_FROM: 'new', PIER_EVENTS_FOLLOW_POLL_MS: '5000', PIER_EVENTS_ACK_WAIT_SECONDS: '2', ...env },
  });
  const nc: NatsConnection = await connect({ servers: h.natsUrl });
  await ensureEventsStream(nc);
  const js = nc.jetstream();
  const client = new pg.Client({ connectionString: h.db.urls.events });
  await client.connect();
  const installation = (await client.query<{ id: string }>('select id from events.installation')).rows[0]!.id;
  await client.end();
  const stop = h.stop;
  return Object.assign(h, {
    base: `/api/v1/workspaces/${h.workspaceId}/events`,
    delete: (webhookId: string) => h.request('DELETE', `/api/v1/workspaces/${h.workspaceId}/webhooks/${webhookId}`, undefined, { role: 'admin' }),
    async publish(over: Partial<OutboxPayload> = {}, msgId?: string) {
      const resourceId = over.resource_id ?? randomUUID();
      const p: OutboxPayload = {
        id: randomUUID(),
        kind: 'secret.created',
        workspace_id: h.workspaceId,
        vpc_id: h.vpcId,
        resource_id: resourceId,
        resource: { kind: 'secret', id: resourceId, name: 'db-password' },
        actor: { user_id: randomUUID(), email: 'dev@example.test', credential: { kind: 'api_key', id: randomUUID(), name: 'ci' } },
        source_ip: '203.0.113.7',
        data: { name: 'db-password', keys: ['PASSWORD'] },
        occurred_at: new Date().toISOString(),
        ...over,
      };
      const subject = eventSubject({ kind: p.kind, workspaceId: p.workspace_id, vpcId: p.vpc_id, resourceId: p.resource_id, data: {} });
      await js.publish(subject, JSON.stringify(p), { msgID: msgId ?? `test:${p.id}` });
      return p;
    },
    async consumerReady() {
      const jsm = await nc.jetstreamManager();
      await until(
        () =>
          jsm.consumers.info(EVENTS_STREAM, `pier-events-${installation}`).then(
            () => true,
            () => false,
          ),
        (ok) => ok,
        20_000,
        100,
      );
    },
    async close() {
      await nc.close();
      await stop();
    },
  });
}
