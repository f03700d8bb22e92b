// What a command runs with: the output, the config directory, and — for commands that
// call the API — the client made from credentials.json and the workspace and VPC from
// config.json (or --workspace / --vpc, by name or id).
import { createPierClient, paginate, unwrap, type PierClient } from '@pier/sdk';
import { CliError } from './errors.ts';
import { configDir, readConfig, readCredentials, type Config, type Credentials } from './config-files.ts';
import { Output } from './output.ts';
import { VERSION } from './version.ts';

export interface GlobalOptions {
  json?: boolean;
  workspace?: string;
  vpc?: string;
}

export interface Scope {
  workspaceID: string;
  vpcID: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isId = (ref: string) => UUID.test(ref);

export function clientFor(apiUrl: string, token?: string): PierClient {
  return createPierClient({ baseUrl: apiUrl, token, userAgent: `pier-cli/${VERSION}` });
}

/** Finds by id (used as it is) or by name among `items`; a clear error when there is none. */
export async function byNameOrId<T extends { id: string; name: string | null }>(
  ref: string,
  kind: string,
  items: () => AsyncIterable<T> | Promise<T[]>,
  hint: string,
): Promise<string> {
  if (isId(ref)) return ref.toLowerCase();
  for await (const item of await items()) if (item.name === ref) return item.id;
  throw new CliError(`no ${kind} named "${ref}" here; see: ${hint}`, `${kind.replace(/ /g, '_').toLowerCase()}_not_found`);
}

export class Context {
  readonly out: Output;
  readonly dir = configDir();
  private loaded?: { credentials: Credentials; config: Config; client: PierClient };

  constructor(readonly options: GlobalOptions) {
    this.out = new Output(Boolean(options.json));
  }

  /** The logged-in client; `pier login` first otherwise. */
  async session(): Promise<{ credentials: Credentials; config: Config; client: PierClient }> {
    if (!this.loaded) {
      const credentials = await readCredentials(this.dir);
      if (!credentials) throw new CliError(`not logged in (no ${this.dir}/credentials.json): run pier login`, 'not_logged_in');
      this.loaded = { credentials, config: await readConfig(this.dir), client: clientFor(credentials.api_url, credentials.token) };
    }
    return this.loaded;
  }

  async client(): Promise<PierClient> {
    return (await this.session()).client;
  }

  async workspaceId(): Promise<string> {
    const { config, client } = await this.session();
    const ref = this.options.workspace ?? config.workspace_id;
    if (!ref) throw new CliError('no workspace chosen: pier workspaces use <name>, or --workspace', 'no_workspace');
    return byNameOrId(
      ref,
      'workspace',
      () => paginate((cursor) => unwrap(client.GET('/api/v1/workspaces', { params: { query: { cursor } } }))),
      'pier workspaces list',
    );
  }

  async scope(): Promise<Scope> {
    const { config, client } = await this.session();
    const workspaceID = await this.workspaceId();
    // A VPC id in config.json belongs to the configured workspace; with --workspace, use its default.
    const ref = this.options.vpc ?? (this.options.workspace ? 'default' : config.vpc_id);
    if (!ref) throw new CliError('no VPC chosen: pier vpcs use <name>, or --vpc', 'no_vpc');
    const vpcID = await byNameOrId(
      ref,
      'VPC',
      () => paginate((cursor) => unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID }, query: { cursor } } }))),
      'pier vpcs list',
    );
    return { workspaceID, vpcID };
  }
}
