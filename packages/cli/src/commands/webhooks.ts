// pier webhooks: the workspace's webhook endpoints (Owner or Admin). A new or rotated signing
// secret is printed once.
import type { Command } from 'commander';
import { paginate, unwrap } from '@pier/sdk';
import { collect, examples, group, run } from '../command.ts';
import type { Context } from '../context.ts';
import { CliError, shownOnce } from '../errors.ts';
import { collectAll, confirm } from '../resources.ts';

const HOOKS = '/api/v1/workspaces/{workspaceID}/webhooks' as const;
const HOOK = `${HOOKS}/{webhookID}` as const;

async function scope(ctx: Context) {
  return { client: await ctx.client(), workspaceID: await ctx.workspaceId() };
}

/** A webhook by id, or by its description or URL when exactly one has it. */
async function hookId(ctx: Context, ref: string): Promise<{ client: Awaited<ReturnType<Context['client']>>; workspaceID: string; webhookID: string }> {
  const { client, workspaceID } = await scope(ctx);
  const all = await collectAll(paginate((cursor) => unwrap(client.GET(HOOKS, { params: { path: { workspaceID }, query: { cursor } } }))));
  const found = all.filter((w) => w.id === ref || w.description === ref || w.url === ref);
  if (found.length !== 1) {
    throw new CliError(found.length ? `${found.length} webhooks match ${ref}: give its id` : `no webhook ${ref} (pier webhooks list)`, 'webhook_not_found');
  }
  return { client, workspaceID, webhookID: found[0]!.id };
}

export function register(program: Command): void {
  const hooks = group(program, 'webhooks', "Endpoints the workspace's events are POSTed to, signed the Standard Webhooks way (Owner or Admin)");

  examples(
    hooks
      .command('create <url>')
      .description('Add an endpoint; its signing secret is printed once')
      .option('--event <pattern>', 'an event type, a prefix ending in .* or * (default *); repeat it', collect)
      .option('--description <text>', 'what the endpoint is for')
      .option('--disabled', 'create it turned off')
      .action(
        run(async (ctx, url: string, o: { event?: string[]; description?: string; disabled?: boolean }) => {
          const { client, workspaceID } = await scope(ctx);
          const created = await unwrap(
            client.POST(HOOKS, {
              params: { path: { workspaceID } },
              body: { url, events: o.event ?? ['*'], description: o.description, enabled: !o.disabled },
            }),
          );
          const secret = shownOnce(created.secret, 'webhook secret');
          ctx.out.result(created, () => {
            ctx.out.line(secret);
            ctx.out.note(`Webhook ${created.id} → ${created.url}: the secret above is shown only now; verify webhook-signature with it.`);
          });
        }),
      ),
    "pier webhooks create https://hooks.example.com/pier --event 'service.*' --event api_key.revoked",
    'pier webhooks create https://hooks.example.com/all --json | jq -r .secret',
  );

  examples(
    hooks
      .command('list')
      .description('The endpoints (never their secrets)')
      .action(
        run(async (ctx) => {
          const { client, workspaceID } = await scope(ctx);
          const items = await collectAll(paginate((cursor) => unwrap(client.GET(HOOKS, { params: { path: { workspaceID }, query: { cursor } } }))));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'URL', value: (w) => w.url },
              { header: 'EVENTS', value: (w) => w.events },
              { header: 'ENABLED', value: (w) => (w.enabled ? 'yes' : `no${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`) },
              { header: 'DESCRIPTION', value: (w) => w.description },
              { header: 'ID', value: (w) => w.id },
            ]),
          );
        }),
      ),
    'pier webhooks list',
  );

  examples(
    hooks
      .command('test <webhook>')
      .description('Send a webhook.test event to the endpoint now')
      .action(
        run(async (ctx, ref: string) => {
          const { client, workspaceID, webhookID } = await hookId(ctx, ref);
          const d = await unwrap(client.POST(`${HOOK}/test`, { params: { path: { workspaceID, webhookID } } }));
          ctx.out.result(d, () => ctx.out.line(`Sent a webhook.test event (delivery ${d.id}); pier webhooks deliveries ${webhookID} shows how it went.`));
        }),
      ),
    'pier webhooks test 0c9e…',
  );

  examples(
    hooks
      .command('deliveries <webhook>')
      .description("The endpoint's recent deliveries, newest first, with each attempt")
      .action(
        run(async (ctx, ref: string) => {
          const { client, workspaceID, webhookID } = await hookId(ctx, ref);
          const page = await unwrap(client.GET(`${HOOK}/deliveries`, { params: { path: { workspaceID, webhookID }, query: {} } }));
          ctx.out.result(page.items, () =>
            ctx.out.table(page.items, [
              { header: 'CREATED', value: (d) => d.created_at },
              { header: 'EVENT', value: (d) => d.event_type },
              { header: 'STATE', value: (d) => d.state },
              { header: 'ATTEMPTS', value: (d) => d.attempts.map((a) => a.status_code ?? 'error').join(' ') },
              { header: 'LAST ERROR', value: (d) => d.attempts.at(-1)?.error ?? '' },
              { header: 'ID', value: (d) => d.id },
            ]),
          );
        }),
      ),
    'pier webhooks deliveries 0c9e…',
  );

  examples(
    hooks
      .command('redeliver <webhook> <delivery>')
      .description('Send a delivery again (same webhook-id)')
      .action(
        run(async (ctx, ref: string, deliveryID: string) => {
          const { client, workspaceID, webhookID } = await hookId(ctx, ref);
          const d = await unwrap(client.POST(`${HOOK}/deliveries/{deliveryID}/redeliver`, { params: { path: { workspaceID, webhookID, deliveryID } } }));
          ctx.out.result(d, () => ctx.out.line(`Queued delivery ${d.id} again.`));
        }),
      ),
    'pier webhooks redeliver 0c9e… 5f2a…',
  );

  examples(
    hooks
      .command('rotate-secret <webhook>')
      .description('A new signing secret, printed once; the old one keeps signing beside it for 24 hours')
      .action(
        run(async (ctx, ref: string) => {
          const { client, workspaceID, webhookID } = await hookId(ctx, ref);
          const rotated = await unwrap(client.POST(`${HOOK}/rotate-secret`, { params: { path: { workspaceID, webhookID } } }));
          const secret = shownOnce(rotated.secret, 'webhook secret');
          ctx.out.result(rotated, () => {
            ctx.out.line(secret);
            ctx.out.note('The old secret signs too for 24 hours: switch your receiver to this one before then.');
          });
        }),
      ),
    'pier webhooks rotate-secret 0c9e…',
  );

  examples(
    hooks
      .command('delete <webhook>')
      .description('Remove an endpoint and its deliveries')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .action(
        run(async (ctx, ref: string, o: { yes?: boolean }) => {
          const { client, workspaceID, webhookID } = await hookId(ctx, ref);
          await confirm(`delete webhook ${webhookID}`, webhookID, o.yes);
          await unwrap(client.DELETE(HOOK, { params: { path: { workspaceID, webhookID } } }));
          ctx.out.result({ deleted: webhookID }, () => ctx.out.line(`Deleted webhook ${webhookID}.`));
        }),
      ),
    'pier webhooks delete 0c9e… --yes',
  );
}
