// pier keys: the workspace's API keys (Owner or Admin). A new key is printed once.
import type { Command } from 'commander';
import { paginate, unwrap } from '@pier/sdk';
import { collect, examples, group, integer, run } from '../command.ts';
import { byNameOrId, type Context } from '../context.ts';
import { shownOnce } from '../errors.ts';
import { collectAll, confirm } from '../resources.ts';

const KEYS = '/api/v1/workspaces/{workspaceID}/api-keys' as const;

async function allKeys(ctx: Context) {
  const client = await ctx.client();
  const workspaceID = await ctx.workspaceId();
  return {
    client,
    workspaceID,
    keys: await collectAll(paginate((cursor) => unwrap(client.GET(KEYS, { params: { path: { workspaceID }, query: { cursor } } })))),
  };
}

export function register(program: Command): void {
  const keys = group(program, 'keys', 'API keys of the workspace, for scripts and integrations (Owner or Admin)');

  examples(
    keys
      .command('list')
      .description('List the live keys: prefixes only, never a whole key')
      .action(
        run(async (ctx) => {
          const { keys: items } = await allKeys(ctx);
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'NAME', value: (k) => k.name },
              { header: 'PREFIX', value: (k) => k.key_prefix },
              { header: 'SCOPES', value: (k) => k.scopes },
              { header: 'EXPIRES', value: (k) => k.expires_at ?? 'never' },
              { header: 'LAST USED', value: (k) => k.last_used_at ?? 'never' },
              { header: 'ID', value: (k) => k.id },
            ]),
          );
        }),
      ),
    'pier keys list',
  );

  examples(
    keys
      .command('create <name>')
      .description('Create a key acting as you; it is printed once and cannot be shown again')
      .option('--expires-in-days <n>', 'expire after this many days (default: never)', integer)
      .option('--scope <scope>', 'recorded on the key (enforces nothing yet); repeat it', collect)
      .action(
        run(async (ctx, name: string, o: { expiresInDays?: number; scope?: string[] }) => {
          const client = await ctx.client();
          const workspaceID = await ctx.workspaceId();
          const created = await unwrap(
            client.POST(KEYS, { params: { path: { workspaceID } }, body: { name, expires_in_days: o.expiresInDays, scopes: o.scope } }),
          );
          const key = shownOnce(created.key, 'API key');
          ctx.out.result(created, () => {
            ctx.out.line(key);
            ctx.out.note(`API key ${created.name} (${created.id}): this is the only time it is shown; store it now.`);
          });
        }),
      ),
    'pier keys create ci --expires-in-days 90',
    'pier keys create deploy-bot --json | jq -r .key',
  );

  examples(
    keys
      .command('revoke <key>')
      .description('Revoke a key (name or id) for good: its next request gets 401')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .action(
        run(async (ctx, ref: string, o: { yes?: boolean }) => {
          const { client, workspaceID, keys: items } = await allKeys(ctx);
          const keyID = await byNameOrId(ref, 'API key', async () => items, 'pier keys list');
          const name = items.find((k) => k.id === keyID)?.name ?? ref;
          await confirm(`revoke API key ${name}`, name, o.yes);
          await unwrap(client.DELETE(`${KEYS}/{keyID}` as const, { params: { path: { workspaceID, keyID } } }));
          ctx.out.result({ revoked: keyID }, () => ctx.out.line(`Revoked API key ${name}.`));
        }),
      ),
    'pier keys revoke ci --yes',
  );
}
