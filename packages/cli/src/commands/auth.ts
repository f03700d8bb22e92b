// pier login / logout / whoami (the contract's Authentication 10): a token is checked,
// exchanged for a CLI session named after this machine, and kept in credentials.json.
import os from 'node:os';
import { rm } from 'node:fs/promises';
import type { Command } from 'commander';
import { paginate, PierApiError, unwrap, type PierClient } from '@pier/sdk';
import { examples, run } from '../command.ts';
import { clientFor, type Context } from '../context.ts';
import { CliError, shownOnce } from '../errors.ts';
import { credentialsPath, readConfig, readCredentials, writeConfig, writeCredentials, type Config } from '../config-files.ts';
import { ask, askHidden, readAllStdin } from '../prompt.ts';

const DEFAULT_API_URL = 'http://127.0.0.1:7100';

/** `pier <host>`, in the characters a session name may hold. */
function sessionName(): string {
  return `pier cli ${os.hostname()}`
    .replace(/[^A-Za-z0-9 ._-]/g, '-')
    .slice(0, 63)
    .trim();
}

function normaliseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`"${raw}" is not a URL (e.g. ${DEFAULT_API_URL})`, 'invalid_api_url', 2);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`the API URL must be http:// or https://, not ${url.protocol}`, 'invalid_api_url', 2);
  return url.origin + url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

/** The workspace and VPC to start in: the configured ones if the user still has them, else the first workspace's `default` VPC. */
async function chooseScope(client: PierClient, current: Config): Promise<Config & { workspaceName?: string; vpcName?: string }> {
  const workspaces: { id: string; name: string }[] = [];
  for await (const w of paginate((cursor) => unwrap(client.GET('/api/v1/workspaces', { params: { query: { cursor } } })))) workspaces.push(w);
  const ws = workspaces.find((w) => w.id === current.workspace_id) ?? workspaces.find((w) => w.name === 'default') ?? workspaces[0];
  if (!ws) return {};
  const vpcs: { id: string; name: string }[] = [];
  for await (const v of paginate((cursor) =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID: ws.id }, query: { cursor } } })),
  ))
    vpcs.push(v);
  const vpc = vpcs.find((v) => v.id === current.vpc_id) ?? vpcs.find((v) => v.name === 'default') ?? vpcs[0];
  return { workspace_id: ws.id, vpc_id: vpc?.id, workspaceName: ws.name, vpcName: vpc?.name };
}

async function login(ctx: Context, opts: { apiUrl?: string }): Promise<void> {
  const previous = await readCredentials(ctx.dir).catch(() => undefined);
  const interactive = Boolean(process.stdin.isTTY);
  let apiUrl = opts.apiUrl ?? (interactive ? '' : (previous?.api_url ?? DEFAULT_API_URL));
  if (!apiUrl) apiUrl = (await ask(`API URL [${previous?.api_url ?? DEFAULT_API_URL}]: `)) || previous?.api_url || DEFAULT_API_URL;
  apiUrl = normaliseUrl(apiUrl);
  const token = (interactive ? await askHidden('Token (an API key or a CLI session token; input hidden): ') : await readAllStdin()).trim();
  if (!token) throw new CliError('no token given: type it at the prompt, or pipe it on standard input', 'no_token', 2);

  const probe = clientFor(apiUrl, token);
  const me = await unwrap(probe.GET('/api/v1/me')).catch((err: unknown) => {
    if (err instanceof PierApiError && err.status === 401) throw new CliError(`the token was refused: ${err.message}`, err.code);
    throw err;
  });
  const session = await unwrap(probe.POST('/api/v1/cli-sessions', { body: { name: sessionName() } }));
  const sessionToken = shownOnce(session.token, 'session token');
  await writeCredentials(ctx.dir, { api_url: apiUrl, token: sessionToken, session_id: session.id });

  const client = clientFor(apiUrl, sessionToken);
  const scope = await chooseScope(client, await readConfig(ctx.dir).catch(() => ({})));
  await writeConfig(ctx.dir, { workspace_id: scope.workspace_id, vpc_id: scope.vpc_id });
  ctx.out.result(
    {
      api_url: apiUrl,
      user: me,
      session: { id: session.id, name: session.name, expires_at: session.expires_at },
      workspace_id: scope.workspace_id ?? null,
      vpc_id: scope.vpc_id ?? null,
    },
    () => {
      ctx.out.line(`Logged in to ${apiUrl} as ${me.email ?? me.id}.`);
      ctx.out.line(`CLI session "${session.name}" until ${session.expires_at}; credentials in ${credentialsPath(ctx.dir)} (0600).`);
      ctx.out.line(scope.workspace_id ? `Using workspace ${scope.workspaceName}, VPC ${scope.vpcName ?? '-'}.` : 'You belong to no workspace yet.');
    },
  );
}

async function logout(ctx: Context): Promise<void> {
  const credentials = await readCredentials(ctx.dir);
  if (!credentials) {
    ctx.out.result({ logged_out: false }, () => ctx.out.line('Not logged in.'));
    return;
  }
  let revoked = false;
  if (credentials.session_id) {
    const client = clientFor(credentials.api_url, credentials.token);
    try {
      await unwrap(client.DELETE('/api/v1/cli-sessions/{sessionID}', { params: { path: { sessionID: credentials.session_id } } }));
      revoked = true;
    } catch (err) {
      // Already revoked or expired: nothing left to revoke. Anything else must be said.
      if (!(err instanceof PierApiError && (err.status === 401 || err.status === 404))) throw err;
    }
  }
  await rm(credentialsPath(ctx.dir), { force: true });
  ctx.out.result({ logged_out: true, session_revoked: revoked }, () => {
    ctx.out.line(revoked ? 'Logged out: the CLI session is revoked and its token removed.' : 'Logged out: the token is removed.');
    if (!credentials.session_id) ctx.out.note('note: that token was not a CLI session (an API key?); it still works until revoked (pier keys revoke).');
  });
}

async function whoami(ctx: Context): Promise<void> {
  const { client, credentials, config } = await ctx.session();
  const me = await unwrap(client.GET('/api/v1/me'));
  let workspace: { id: string; name: string; role: string } | null = null;
  let vpc: { id: string; name: string } | null = null;
  if (ctx.options.workspace || config.workspace_id) {
    const workspaceID = await ctx.workspaceId();
    workspace = await unwrap(client.GET('/api/v1/workspaces/{workspaceID}', { params: { path: { workspaceID } } }));
    if (ctx.options.vpc || config.vpc_id)
      vpc = await unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}', { params: { path: await ctx.scope() } }));
  }
  ctx.out.result({ ...me, api_url: credentials.api_url, workspace, vpc }, () =>
    ctx.out.fields([
      ['user', me.email ?? me.id],
      ['user id', me.id],
      ['api', credentials.api_url],
      ['workspace', workspace ? `${workspace.name} (${workspace.id})` : null],
      ['role', workspace?.role],
      ['vpc', vpc ? `${vpc.name} (${vpc.id})` : null],
    ]),
  );
}

export function register(program: Command): void {
  examples(
    program
      .command('login')
      .description('Log in: checks a token (an API key or a CLI session token) and keeps a new CLI session for this machine')
      .option('--api-url <url>', `the Pier API (default: the last one, or ${DEFAULT_API_URL})`)
      .action(run(login)),
    'pier login',
    'pier login --api-url https://pier.example.com < token.txt',
  );
  examples(program.command('logout').description('Revoke this CLI session and remove its token').action(run(logout)), 'pier logout');
  examples(
    program.command('whoami').description('The user, API, workspace and VPC the CLI acts with').action(run(whoami)),
    'pier whoami',
    'pier whoami --json',
  );
}
