// pier db allowlist: the CIDR blocks a database admits from outside (empty: no restriction).
import type { Command } from 'commander';
import { paginate, unwrap } from '@pier/sdk';
import { examples, run } from '../command.ts';
import { collectAll, database, DATABASE } from '../resources.ts';

const ALLOWLIST = `${DATABASE}/ip-allowlist` as const;

export function register(db: Command): void {
  const allowlist = db.command('allowlist').description('IP allowlist of a database (empty: no restriction)');
  allowlist.action(() => allowlist.help());

  examples(
    allowlist
      .command('list <database>')
      .description('List the rules')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await database(ctx, ref);
          const items = await collectAll(paginate((cursor) => unwrap(client.GET(ALLOWLIST, { params: { path, query: { cursor } } }))));
          ctx.out.result(items, () =>
            ctx.out.table(
              items,
              [
                { header: 'CIDR', value: (x) => x.cidr },
                { header: 'DESCRIPTION', value: (x) => x.description },
                { header: 'ID', value: (x) => x.id },
              ],
              'no rules: every address is admitted',
            ),
          );
        }),
      ),
    'pier db allowlist list orders',
  );

  examples(
    allowlist
      .command('add <database> <cidr>')
      .description('Admit a CIDR block (the first rule restricts the database to the listed ones)')
      .option('--description <text>', 'what the rule is for')
      .action(
        run(async (ctx, ref: string, cidr: string, o: { description?: string }) => {
          const { client, path } = await database(ctx, ref);
          const rule = await unwrap(client.POST(ALLOWLIST, { params: { path }, body: { cidr, description: o.description } }));
          ctx.out.result(rule, () => ctx.out.line(`Added ${rule.cidr} (${rule.id}).`));
        }),
      ),
    'pier db allowlist add orders 203.0.113.0/24 --description office',
  );

  examples(
    allowlist
      .command('remove <database> <rule>')
      .description('Remove a rule, by its id or its CIDR')
      .action(
        run(async (ctx, ref: string, rule: string) => {
          const { client, path } = await database(ctx, ref);
          const rules = (await unwrap(client.GET(ALLOWLIST, { params: { path } }))).items;
          const found = rules.find((r) => r.id === rule || r.cidr === rule);
          const ruleID = found?.id ?? rule;
          await unwrap(client.DELETE(`${ALLOWLIST}/{ruleID}` as const, { params: { path: { ...path, ruleID } } }));
          ctx.out.result({ removed: ruleID }, () => ctx.out.line(`Removed ${found?.cidr ?? ruleID}.`));
        }),
      ),
    'pier db allowlist remove orders 203.0.113.0/24',
  );
}
