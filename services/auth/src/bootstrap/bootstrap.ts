import { randomUUID } from 'node:crypto';
import { crashPoint, type Logger } from '@pier/kit';
import type { AuthStore } from '../domain/store-port.ts';
import { createWorkspaceIn } from '../domain/workspaces.ts';
import { apiKeyCreated } from '../domain/events.ts';
import { apiKeyOf, generateApiKey } from '../domain/tokens.ts';
import { cliFilePaths, writeCliFiles } from './files.ts';

export const BOOTSTRAP_WORKSPACE = 'default';
export const BOOTSTRAP_KEY_NAME = 'bootstrap';

export interface BootstrapSettings {
  email: string;
  configDir: string;
  /** The gateway URL written into credentials.json. */
  apiUrl: string;
  /** The key to create (PIER_BOOTSTRAP_API_KEY); a new one when absent. */
  apiKey?: string;
}

export interface BootstrapResult {
  /** True only on the start that created everything. */
  created: boolean;
  userId: string;
  workspaceId: string;
  vpcId: string;
  apiKeyId: string;
  credentialsPath: string;
  configPath: string;
  apiUrl: string;
  /** The bootstrap API key: present only in the result of the start that created it. */
  token?: string;
}

/**
 * First start against an empty database: a user owning workspace `default` with VPC
 * `default` and an API key `bootstrap`, and the CLI's files pointing at them. Later
 * starts find the record of it and create nothing (the files are left as they are; the
 * key cannot be written again since only its hash is kept).
 *
 * An advisory lock makes concurrent first starts of several auth instances safe: one
 * creates, the others wait and then find the record. The files are written before the
 * transaction commits, so a failed write leaves the database empty and the next start
 * tries again, rather than holding a key nobody has.
 */
export async function bootstrap(store: AuthStore, settings: BootstrapSettings, log: Logger): Promise<BootstrapResult | undefined> {
  const files = cliFilePaths(settings.configDir);
  const result = await store.transaction(async (tx): Promise<BootstrapResult | undefined> => {
    await tx.lockBootstrap();
    const done = await tx.bootstrapRecord();
    if (done) {
      return {
        created: false,
        userId: done.user_id,
        workspaceId: done.workspace_id,
        vpcId: done.vpc_id,
        apiKeyId: done.api_key_id,
        apiUrl: settings.apiUrl,
        ...files,
      };
    }
    // A database that already has users was set up some other way; leave it alone.
    if (await tx.hasUsers()) return undefined;
    const user = await tx.users.findOrCreate(settings.email);
    const { workspace, vpc } = await createWorkspaceIn(tx, user.id, BOOTSTRAP_WORKSPACE);
    const secret = settings.apiKey ? apiKeyOf(settings.apiKey) : generateApiKey();
    const key = await tx.apiKeys.insert({
      id: randomUUID(),
      workspace_id: workspace.id,
      user_id: user.id,
      name: BOOTSTRAP_KEY_NAME,
      key_prefix: secret.keyPrefix,
      key_hash: secret.keyHash,
      scopes: [],
      expires_at: null,
    });
    await tx.writeEvent(apiKeyCreated(workspace.id, key.id, key.name, null, [], user.id));
    await tx.recordBootstrap({ user_id: user.id, workspace_id: workspace.id, vpc_id: vpc.id, api_key_id: key.id });
    await writeCliFiles(settings.configDir, { api_url: settings.apiUrl, token: secret.key }, { workspace_id: workspace.id, vpc_id: vpc.id });
    // The files hold a key the database does not (yet): the next start creates everything again and rewrites them.
    crashPoint('auth.bootstrap.files-written');
    return { created: true, userId: user.id, workspaceId: workspace.id, vpcId: vpc.id, apiKeyId: key.id, apiUrl: settings.apiUrl, token: secret.key, ...files };
  });
  // Committed with the files written: the next start finds the record and leaves the files be.
  crashPoint('auth.bootstrap.committed');
  if (!result) {
    log.info('bootstrap skipped: the database already has users');
  } else if (result.created) {
    log.info(
      { email: settings.email, workspaceId: result.workspaceId, vpcId: result.vpcId, credentials: result.credentialsPath, config: result.configPath },
      `bootstrap: created ${settings.email} owning workspace "default" with VPC "default" and API key "bootstrap"; CLI credentials written to ${result.credentialsPath} and ${result.configPath}`,
    );
  } else {
    log.info(
      { credentials: result.credentialsPath, config: result.configPath },
      `bootstrap already done; CLI files are at ${result.credentialsPath} and ${result.configPath}`,
    );
  }
  return result;
}
