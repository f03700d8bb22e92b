// pier secrets: named bundles of key-value pairs a service references. Values go to the
// cluster's secret store and are never shown again (no command reads them back).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { unwrap } from '@pier/sdk';
import { examples, group, run } from '../command.ts';
import { CliError } from '../errors.ts';
import { parseDotenv } from '../dotenv.ts';
import { allSecrets, collectAll, confirm, secretId, SECRETS } from '../resources.ts';
import { splitAssignment } from './env.ts';

const SECRET = `${SECRETS}/{secretID}` as const;

export function register(program: Command): void {
  const secrets = group(program, 'secrets', 'Shared secrets of the VPC (values are write-only)');

  examples(
    secrets
      .command('list')
      .description('List the secrets: names and key names, never values')
      .action(
        run(async (ctx) => {
          const items = await collectAll(allSecrets(await ctx.client(), await ctx.scope()));
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: 'NAME', value: (s) => s.name },
              { header: 'KEYS', value: (s) => s.keys },
              { header: 'CREATED', value: (s) => s.created_at },
              { header: 'ID', value: (s) => s.id },
            ]),
          );
        }),
      ),
    'pier secrets list',
  );

  examples(
    secrets
      .command('create <name> [pairs...]')
      .description('Create a secret from KEY=VALUE pairs and/or a dotenv file (to change one, create a new one and repoint)')
      .option('--from-env-file <path>', 'read KEY=VALUE lines from a dotenv file (pairs given as arguments win)')
      .action(
        run(async (ctx, name: string, pairs: string[], o: { fromEnvFile?: string }) => {
          const values: Record<string, string> = {};
          if (o.fromEnvFile) Object.assign(values, parseDotenv(await readFile(o.fromEnvFile, 'utf8'), o.fromEnvFile));
          for (const pair of pairs) {
            const [key, value] = splitAssignment(pair, 'KEY=VALUE');
            values[key] = value;
          }
          if (!Object.keys(values).length) throw new CliError('no values: give KEY=VALUE pairs or --from-env-file', 'invalid_argument', 2);
          const created = await unwrap((await ctx.client()).POST(SECRETS, { params: { path: await ctx.scope() }, body: { name, values } }));
          ctx.out.result(created, () => ctx.out.line(`Created secret ${created.name} (${created.id}) with keys ${created.keys.join(', ')}.`));
        }),
      ),
    'pier secrets create db-creds username=app password=s3cr3t',
    'pier secrets create api-keys --from-env-file .env.production',
  );

  examples(
    secrets
      .command('show <secret>')
      .description('One secret (name or id): its keys, never its values')
      .action(
        run(async (ctx, ref: string) => {
          const client = await ctx.client();
          const scope = await ctx.scope();
          const s = await unwrap(client.GET(SECRET, { params: { path: { ...scope, secretID: await secretId(client, scope, ref) } } }));
          ctx.out.result(s, () =>
            ctx.out.fields([
              ['name', s.name],
              ['id', s.id],
              ['keys', s.keys],
              ['created', s.created_at],
              ['updated', s.updated_at],
            ]),
          );
        }),
      ),
    'pier secrets show db-creds',
  );

  examples(
    secrets
      .command('delete <secret>')
      .description('Delete a secret; services referencing it fail on their next rollout (repoint them first)')
      .option('-y, --yes', 'do not ask (required when standard input is not a terminal)')
      .action(
        run(async (ctx, ref: string, o: { yes?: boolean }) => {
          const client = await ctx.client();
          const scope = await ctx.scope();
          const secretID = await secretId(client, scope, ref);
          await confirm(`delete secret ${ref}`, ref, o.yes);
          await unwrap(client.DELETE(SECRET, { params: { path: { ...scope, secretID } } }));
          ctx.out.result({ deleted: secretID }, () => ctx.out.line(`Deleted secret ${ref}.`));
        }),
      ),
    'pier secrets delete db-creds --yes',
  );
}
