// The two files of the contract (Authentication 10), in the config directory
// (`$PIER_CONFIG_DIR`, else `~/.config/pier`), both the owner's alone (0600):
//   credentials.json  {"api_url", "token"}  (+ "session_id" when the token is a CLI session)
//   config.json       {"workspace_id", "vpc_id"}
// `./pier up`'s bootstrap writes the same two files. There is no environment-variable login.
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CliError } from './errors.ts';

export interface Credentials {
  api_url: string;
  token: string;
  /** Set by `pier login`: the session `pier logout` revokes. */
  session_id?: string;
}

export interface Config {
  workspace_id?: string;
  vpc_id?: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PIER_CONFIG_DIR || path.join(os.homedir(), '.config', 'pier');
}

export const credentialsPath = (dir: string) => path.join(dir, 'credentials.json');
export const configPath = (dir: string) => path.join(dir, 'config.json');

/** The file's JSON, or undefined when it does not exist. Refuses a file others may read. */
async function readPrivateJson<T>(file: string): Promise<T | undefined> {
  let mode: number;
  try {
    mode = (await stat(file)).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
    const shown = (mode & 0o777).toString(8).padStart(4, '0');
    throw new CliError(`${file} can be read by others (mode ${shown}) and holds a secret; fix it with: chmod 600 ${file}`, 'insecure_file');
  }
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    throw new CliError(`${file} is not valid JSON; run pier login again`, 'invalid_file');
  }
}

/** Written whole (temp file, then rename), created 0600, so a crash never leaves half a file. */
async function writePrivateJson(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

export async function readCredentials(dir: string): Promise<Credentials | undefined> {
  const c = await readPrivateJson<Partial<Credentials>>(credentialsPath(dir));
  if (!c) return undefined;
  if (typeof c.api_url !== 'string' || typeof c.token !== 'string' || !c.token) {
    throw new CliError(`${credentialsPath(dir)} has no api_url and token; run pier login`, 'invalid_file');
  }
  return c as Credentials;
}

export const writeCredentials = (dir: string, c: Credentials) => writePrivateJson(credentialsPath(dir), c);

export async function readConfig(dir: string): Promise<Config> {
  return (await readPrivateJson<Config>(configPath(dir))) ?? {};
}

export const writeConfig = (dir: string, c: Config) => writePrivateJson(configPath(dir), c);
