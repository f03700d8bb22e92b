// pier workspaces / pier vpcs: list them, and `use` one (written to config.json).
import type { Command } from 'commander';
import { paginate, unwrap } from '@pier/sdk';
import { examples, group, run } from '../command.ts';
import { byNameOrId, type Context } from '../context.ts';
import { readConfig, writeConfig } from '../config-files.ts';

async function allWorkspaces(ctx: Context) {
  const client = await ctx.client();
  const items = [];
  for await (const w of paginate((cursor) => unwrap(client.GET('/api/v1/workspaces', { params: { query: { cursor } } })))) items.push(w);
  return items;
}

async function allVpcs(ctx: Context, workspaceID: string) {
  const client = await ctx.client();
  const items = [];
  for await (const v of paginate((cursor) =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID }, query: { cursor } } })),
  ))
    items.push(v);
  return items;
}

// A space, not an empty cell (which prints as '-'): only the chosen row is marked.
const current = (id: string, chosen?: string) => (id === chosen ? '*' : ' ');

export function register(program: Command): void {
  const workspaces = group(program, 'workspaces', 'Workspaces you belong to, and which one the CLI uses');
  examples(
    workspaces
      .command('list')
      .description('List your workspaces and your role in each (* marks the one in use)')
      .action(
        run(async (ctx) => {
          const items = await allWorkspaces(ctx);
          const { workspace_id } = await readConfig(ctx.dir);
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: '', value: (w) => current(w.id, workspace_id) },
              { header: 'NAME', value: (w) => w.name },
              { header: 'ROLE', value: (w) => w.role },
              { header: 'ID', value: (w) => w.id },
            ]),
          );
        }),
      ),
    'pier workspaces list',
  );
  examples(
    workspaces
      .command('use <workspace>')
      .description("Use this workspace (name or id) from now on, in its VPC named 'default' (or its first)")
      .action(
        run(async (ctx, ref: string) => {
          const workspaceID = await byNameOrId(ref, 'workspace', () => allWorkspaces(ctx), 'pier workspaces list');
          const vpcs = await allVpcs(ctx, workspaceID);
          const vpc = vpcs.find((v) => v.name === 'default') ?? vpcs[0];
          await writeConfig(ctx.dir, { workspace_id: workspaceID, vpc_id: vpc?.id });
          ctx.out.result({ workspace_id: workspaceID, vpc_id: vpc?.id ?? null }, () => ctx.out.line(`Using workspace ${ref}, VPC ${vpc?.name ?? '(none)'}.`));
        }),
      ),
    'pier workspaces use acme',
  );

  const vpcs = group(program, 'vpcs', 'VPCs of the workspace, and which one the CLI uses');
  examples(
    vpcs
      .command('list')
      .description('List the VPCs of the workspace (* marks the one in use)')
      .action(
        run(async (ctx) => {
          const items = await allVpcs(ctx, await ctx.workspaceId());
          const { vpc_id } = await readConfig(ctx.dir);
          ctx.out.result(items, () =>
            ctx.out.table(items, [
              { header: '', value: (v) => current(v.id, vpc_id) },
              { header: 'NAME', value: (v) => v.name },
              { header: 'ID', value: (v) => v.id },
              { header: 'CREATED', value: (v) => v.created_at },
            ]),
          );
        }),
      ),
    'pier vpcs list',
  );
  examples(
    vpcs
      .command('use <vpc>')
      .description('Use this VPC (name or id) of the workspace from now on')
      .action(
        run(async (ctx, ref: string) => {
          const workspaceID = await ctx.workspaceId();
          const vpcID = await byNameOrId(ref, 'VPC', () => allVpcs(ctx, workspaceID), 'pier vpcs list');
          await writeConfig(ctx.dir, { workspace_id: workspaceID, vpc_id: vpcID });
          ctx.out.result({ workspace_id: workspaceID, vpc_id: vpcID }, () => ctx.out.line(`Using VPC ${ref}.`));
        }),
      ),
    'pier vpcs use staging',
  );
}
