import { connect, DeliverPolicy } from 'nats';
import { EVENTS_STREAM } from '@pier/kit';

export interface CollectedEvent {
  subject: string;
  raw: string;
  payload: any;
}

/** Collects the events published under a workspace/VPC prefix from JetStream, from now on. */
export async function collectEvents(natsUrl: string, workspaceId: string, vpcId: string) {
  const nc = await connect({ servers: natsUrl });
  const jsm = await nc.jetstreamManager();
  // The stream exists once any relay connected; make sure before subscribing.
  try {
    await jsm.streams.info(EVENTS_STREAM);
  } catch {
    await jsm.streams.add({ name: EVENTS_STREAM, subjects: ['pier.events.>'] });
  }
  const consumer = await nc.jetstream().consumers.get(EVENTS_STREAM, {
    // One subject, not an array: the NATS here (2.9) predates multi-filter consumers.
    filterSubjects: `pier.events.${workspaceId}.${vpcId}.>`,
    deliver_policy: DeliverPolicy.New,
  });
  const events: CollectedEvent[] = [];
  const messages = await consumer.consume();
  void (async () => {
    for await (const m of messages) {
      const raw = m.string();
      events.push({ subject: m.subject, raw, payload: JSON.parse(raw) });
    }
  })();
  return {
    events,
    async waitFor(kind: string, resourceId: string, timeoutMs = 10_000): Promise<CollectedEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const e = events.find((x) => x.payload.kind === kind && x.payload.resource_id === resourceId);
        if (e) return e;
        if (Date.now() > deadline) throw new Error(`no ${kind} event for ${resourceId} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      await messages.close();
      await nc.close();
    },
  };
}
