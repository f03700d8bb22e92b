// The VPC's resources as the CLI names them: by name or id, listed page by page.
import { paginate, unwrap, type PierClient } from '@pier/sdk';
import { byNameOrId, type Context, type Scope } from './context.ts';
import { CliError } from './errors.ts';
import { ask } from './prompt.ts';
import { waitFor } from './wait.ts';

export const SERVICES = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services' as const;
export const SERVICE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}' as const;
export const DATABASES = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases' as const;
export const DATABASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}' as const;
export const SECRETS = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets' as const;

export const allServices = (client: PierClient, path: Scope) => paginate((cursor) => unwrap(client.GET(SERVICES, { params: { path, query: { cursor } } })));
export const allDatabases = (client: PierClient, path: Scope) => paginate((cursor) => unwrap(client.GET(DATABASES, { params: { path, query: { cursor } } })));
export const allSecrets = (client: PierClient, path: Scope) => paginate((cursor) => unwrap(client.GET(SECRETS, { params: { path, query: { cursor } } })));

/** Collects an async iterator (the CLI prints whole lists). */
export async function collectAll<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The client, the scope and the service's path parameters, from a name or an id. */
export async function service(ctx: Context, ref: string) {
  const client = await ctx.client();
  const scope = await ctx.scope();
  const serviceID = await byNameOrId(ref, 'service', () => allServices(client, scope), 'pier services list');
  return { client, path: { ...scope, serviceID } };
}

export async function database(ctx: Context, ref: string) {
  const client = await ctx.client();
  const scope = await ctx.scope();
  const databaseID = await byNameOrId(ref, 'database', () => allDatabases(client, scope), 'pier db list');
  return { client, path: { ...scope, databaseID } };
}

export async function secretId(client: PierClient, scope: Scope, ref: string): Promise<string> {
  return byNameOrId(ref, 'secret', () => allSecrets(client, scope), 'pier secrets list');
}

/**
 * Destructive commands ask first: on a terminal, type the name back; elsewhere `--yes`
 * is required, so a script never deletes by accident.
 */
export async function confirm(what: string, name: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw new CliError(`refusing to ${what} without --yes (standard input is not a terminal)`, 'confirmation_required', 2);
  const answer = await ask(`To ${what}, type its name (${name}): `);
  if (answer !== name) throw new CliError('not confirmed; nothing was done', 'not_confirmed');
}

/** Waits for a service's rollout to land: `running` (or `scaled` at zero replicas), failing on `crashed`. */
export function waitForRollout(client: PierClient, path: Scope & { serviceID: string }, name: string, timeoutSeconds: number) {
  return waitFor({
    what: `service ${name}`,
    read: () => unwrap(client.GET(SERVICE, { params: { path } })),
    status: (s) => s.status,
    done: ['running', 'scaled'],
    failed: ['crashed'],
    reason: (s) => s.status_message,
    timeoutSeconds,
  });
}
