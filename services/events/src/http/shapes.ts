// The JSON events answers with, and the zod schemas that document it in OpenAPI.
import { z } from 'zod';
import { listOf } from '@pier/kit';
import type { StoredEvent } from '../domain/records.ts';
import { eventView } from '../domain/event-view.ts';

const credentialSchema = z.object({
  kind: z.enum(['api_key', 'cli_session', 'oidc']),
  id: z.string().nullable().describe("The API key's or CLI session's id; null for an OIDC sign-in"),
  name: z.string().nullable(),
});

export const eventSchema = z.object({
  id: z.string().describe('Event id (a UUID); `id:` of the server-sent event, and what `Last-Event-ID` takes'),
  type: z.string().describe('What happened, e.g. `api_key.revoked`, `service.status_changed`'),
  occurred_at: z.string().describe('ISO 8601 UTC'),
  workspace_id: z.string(),
  vpc_id: z.string().nullable(),
  resource: z.object({ kind: z.string(), id: z.string(), name: z.string().nullable() }),
  actor: z
    .object({ user_id: z.string(), email: z.string().nullable(), credential: credentialSchema.nullable() })
    .nullable()
    .describe("Who made the change and with which credential; null for the platform's own changes (status changes, backups, wakes)"),
  source_ip: z.string().nullable().describe('The client address the gateway saw; null for the platform’s own changes'),
  data: z.record(z.string(), z.unknown()).describe('What changed; never a secret value, password, token or command arguments'),
});

export const eventListSchema = listOf(eventSchema);

/** An event as the API answers it. */
export const eventJson = (e: StoredEvent): z.infer<typeof eventSchema> => eventView(e);
