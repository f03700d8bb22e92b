// pier services env: a service's environment. Literals `KEY=VALUE`, and references to a
// secret's key (`--secret KEY=<secret>:<key>`) whose value only the container ever sees.
// Every change is one PUT of the whole list: one rollout, however many keys change.
import type { Command } from 'commander';
import { unwrap } from '@pier/sdk';
import { collect, examples, run, WAIT_TIMEOUT } from '../command.ts';
import type { Context } from '../context.ts';
import { CliError } from '../errors.ts';
import { allSecrets, collectAll, secretId, service, SERVICE, waitForRollout } from '../resources.ts';

const ENV = `${SERVICE}/env` as const;
type Entry = { key: string; value: string } | { key: string; secret_id: string; secret_key: string };

/** `KEY=VALUE` → [KEY, VALUE]; the value may hold '=' and be empty. */
export function splitAssignment(text: string, what: string): [string, string] {
  const i = text.indexOf('=');
  if (i <= 0) throw new CliError(`"${text}" is not ${what}`, 'invalid_argument', 2);
  return [text.slice(0, i), text.slice(i + 1)];
}

async function current(ctx: Context, ref: string) {
  const { client, path } = await service(ctx, ref);
  const env = await unwrap(client.GET(ENV, { params: { path } }));
  const entries: Entry[] = env.variables.map((v) =>
    'secret_id' in v ? { key: v.key, secret_id: v.secret_id, secret_key: v.secret_key } : { key: v.key, value: v.value },
  );
  return { client, path, entries };
}

async function replace(
  ctx: Context,
  ref: string,
  o: { wait?: boolean; timeout: number },
  change: (entries: Entry[], lookup: (secret: string) => Promise<string>) => Promise<Entry[]>,
) {
  const { client, path, entries } = await current(ctx, ref);
  const scope = { workspaceID: path.workspaceID, vpcID: path.vpcID };
  const next = await change(entries, (secret) => secretId(client, scope, secret));
  const answer = await unwrap(client.PUT(ENV, { params: { path }, body: { variables: next } }));
  if (o.wait && answer.deployment) await waitForRollout(client, path, ref, o.timeout);
  ctx.out.result(answer, () =>
    ctx.out.line(
      `${answer.variables.length} variable(s) set${answer.deployment ? `; rolling out as deployment ${answer.deployment.id}` : ' (not deployed yet: no rollout)'}.`,
    ),
  );
}

export function register(services: Command): void {
  const env = services.command('env').description("A service's environment variables");
  env.action(() => env.help());

  examples(
    env
      .command('list <service>')
      .description('Variables: literals with their value, references as secret and key (never the value)')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path, entries } = await current(ctx, ref);
          const names = new Map((await collectAll(allSecrets(client, { workspaceID: path.workspaceID, vpcID: path.vpcID }))).map((s) => [s.id, s.name]));
          ctx.out.result(entries, () =>
            ctx.out.table(
              entries,
              [
                { header: 'KEY', value: (e) => e.key },
                { header: 'VALUE', value: (e) => ('value' in e ? e.value : `(secret ${names.get(e.secret_id) ?? e.secret_id}:${e.secret_key})`) },
              ],
              'no variables',
            ),
          );
        }),
      ),
    'pier services env list web',
  );

  examples(
    env
      .command('set <service> [assignments...]')
      .description('Set variables (KEY=VALUE literals, --secret references); the others are kept; one rollout')
      .option('--secret <KEY=secret:key>', 'a reference to a key of a secret (name or id); repeat it', collect)
      .option('--wait', 'wait until the rollout lands')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, assignments: string[], o: { secret?: string[]; wait?: boolean; timeout: number }) => {
          if (!assignments.length && !o.secret?.length) throw new CliError('nothing to set: give KEY=VALUE or --secret KEY=secret:key', 'invalid_argument', 2);
          await replace(ctx, ref, o, async (entries, lookup) => {
            const updates: Entry[] = assignments.map((a) => {
              const [key, value] = splitAssignment(a, 'KEY=VALUE');
              return { key, value };
            });
            for (const r of o.secret ?? []) {
              const [key, target] = splitAssignment(r, 'KEY=secret:key');
              const colon = target.lastIndexOf(':');
              if (colon <= 0 || colon === target.length - 1) throw new CliError(`"${r}" is not KEY=secret:key`, 'invalid_argument', 2);
              updates.push({ key, secret_id: await lookup(target.slice(0, colon)), secret_key: target.slice(colon + 1) });
            }
            const keys = new Set(updates.map((u) => u.key));
            return [...entries.filter((e) => !keys.has(e.key)), ...updates];
          });
        }),
      ),
    'pier services env set web LOG_LEVEL=debug FEATURE_X=on',
    'pier services env set web --secret DATABASE_PASSWORD=db-creds:password --wait',
  );

  examples(
    env
      .command('unset <service> <keys...>')
      .description('Remove variables; one rollout')
      .option('--wait', 'wait until the rollout lands')
      .option(...WAIT_TIMEOUT)
      .action(
        run(async (ctx, ref: string, keys: string[], o: { wait?: boolean; timeout: number }) => {
          await replace(ctx, ref, o, async (entries) => {
            const missing = keys.filter((k) => !entries.some((e) => e.key === k));
            if (missing.length) throw new CliError(`not set on this service: ${missing.join(', ')}`, 'env_var_not_found');
            return entries.filter((e) => !keys.includes(e.key));
          });
        }),
      ),
    'pier services env unset web FEATURE_X',
  );
}
