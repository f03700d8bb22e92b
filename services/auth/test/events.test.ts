import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { ensureEventsStream, EVENTS_STREAM } from '@pier/kit';
import { startAuth, type AuthHarness } from './harness.ts';

// Auth's events leave through the outbox and the relay, and arrive on real JetStream.

let h: AuthHarness;
let nc: NatsConnection;

beforeAll(async () => {
  h = await startAuth();
  nc = await connect({ servers: h.natsUrl });
  await ensureEventsStream(nc);
});

afterAll(async () => {
  await nc?.close();
  await h?.stop();
});

interface Received {
  subject: string;
  payload: { kind: string; workspace_id: string; vpc_id: string | null; resource_id: string; data: Record<string, unknown> };
}

/** Reads this workspace's events from the start of the stream until `done` says so. */
async function collect(workspaceId: string, done: (seen: Received[]) => boolean): Promise<Received[]> {
  // One filter subject as a string: nats-server 2.9 knows `filter_subject`, not the
  // plural form an array would send.
  const consumer = await nc.jetstream().consumers.get(EVENTS_STREAM, { filterSubjects: `pier.events.${workspaceId}.>` });
  const seen: Received[] = [];
  const deadline = Date.now() + 15_000;
  while (!done(seen) && Date.now() < deadline) {
    const batch = await consumer.fetch({ max_messages: 50, expires: 1000 });
    for await (const m of batch) seen.push({ subject: m.subject, payload: m.json() });
  }
  return seen;
}

describe('events', () => {
  it('publishes workspace, member, VPC and API key events, without key material', { timeout: 30_000 }, async () => {
    const boot = h.running.bootstrap!;
    const ws = boot.workspaceId;
    const owner = await h.as({ subject: boot.userId, workspaceId: ws, role: 'owner' });
    const key = (
      await owner
        .post(`/api/v1/workspaces/${ws}/api-keys`)
        .send({ name: 'evented', scopes: ['read'] })
        .expect(201)
    ).body;
    await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${key.id}`).expect(204);
    const member = (await owner.post(`/api/v1/workspaces/${ws}/members`).send({ email: 'm@example.com', role: 'viewer' }).expect(201)).body;
    await owner.patch(`/api/v1/workspaces/${ws}/members/${member.user_id}`).send({ role: 'developer' }).expect(200);
    await owner.delete(`/api/v1/workspaces/${ws}/members/${member.user_id}`).expect(204);
    const vpc = (await owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: 'evented' }).expect(201)).body;
    const inVpc = await h.as({ subject: boot.userId, workspaceId: ws, vpcId: vpc.id, role: 'owner' });
    await inVpc.delete(`/api/v1/workspaces/${ws}/vpcs/${vpc.id}`).expect(204);

    const seen = await collect(ws, (s) => s.some((e) => e.payload.kind === 'vpc.deleted'));
    const kinds = seen.map((e) => e.payload.kind);
    expect(kinds).toEqual([
      // bootstrap
      'workspace.created',
      'member.added',
      'vpc.created',
      'api_key.created',
      // this test
      'api_key.created',
      'api_key.revoked',
      'member.added',
      'member.role_changed',
      'member.removed',
      'vpc.created',
      'vpc.deleted',
    ]);
    const created = seen[4]!;
    expect(created.subject).toBe(`pier.events.${ws}._.api_key_created.${key.id}`);
    expect(created.payload).toMatchObject({ workspace_id: ws, resource_id: key.id, data: { name: 'evented', scopes: ['read'], created_by: boot.userId } });
    expect(seen[7]!.payload.data).toMatchObject({ user_id: member.user_id, from: 'viewer', to: 'developer' });
    expect(seen[10]!.subject).toBe(`pier.events.${ws}.${vpc.id}.vpc_deleted.${vpc.id}`);

    const everything = JSON.stringify(seen);
    expect(everything).not.toContain(key.key.slice(3, 20));
    expect(everything).not.toContain(key.key_prefix);
    expect(everything).not.toContain(boot.token!.slice(3, 20));
  });
});
