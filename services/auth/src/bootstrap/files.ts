import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The CLI's two files, as the spec names them. */
export interface CliFiles {
  credentialsPath: string;
  configPath: string;
}

export function cliFilePaths(configDir: string): CliFiles {
  return { credentialsPath: path.join(configDir, 'credentials.json'), configPath: path.join(configDir, 'config.json') };
}

/**
 * Writes credentials.json ({api_url, token}) and config.json ({workspace_id, vpc_id}),
 * readable by the owner only (files 0600, directory 0700, whatever the umask). Each file
 * is written beside its final name and renamed into place, so a reader never sees half a
 * file and the token never sits in a file with looser permissions.
 */
export async function writeCliFiles(
  configDir: string,
  credentials: { api_url: string; token: string },
  config: { workspace_id: string; vpc_id: string },
): Promise<CliFiles> {
  await mkdir(configDir, { recursive: true, mode: 0o700 });
  await chmod(configDir, 0o700);
  const files = cliFilePaths(configDir);
  await writePrivate(files.credentialsPath, credentials);
  await writePrivate(files.configPath, config);
  return files;
}

async function writePrivate(file: string, content: unknown): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(content, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}
