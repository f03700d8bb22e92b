// The built `pier` CLI as a subprocess against the running platform: login and its files,
// the refusal of a credentials file others can read, workspaces and VPCs, keys, secrets,
// errors and exit codes, --json, logout, the hidden token prompt on a real terminal, and
// the package `npm install -g` installs.
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ROOT } from '../../packages/cli/bundle.ts';
import { runCli, startCli, type CliHarness } from './cli-support.ts';

const exec = promisify(execFile);
let cli: CliHarness;

beforeAll(async () => {
  cli = await startCli();
});
afterAll(async () => {
  await cli?.stop();
});

const mode = async (file: string) => (await stat(file)).mode & 0o777;

describe('pier login', () => {
  it('checks the token, keeps a CLI session for this machine, and writes both files 0600', async () => {
    const r = await cli.login();
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toContain(`as ${cli.platform.bootstrap.email}`);
    const credentials = JSON.parse(await readFile(path.join(cli.dir, 'credentials.json'), 'utf8'));
    expect(credentials).toEqual({ api_url: cli.platform.gatewayUrl, token: expect.stringMatching(/^[0-9a-f]{64}$/), session_id: expect.any(String) });
    expect(credentials.token).not.toBe(cli.platform.bootstrap.token);
    expect(JSON.parse(await readFile(path.join(cli.dir, 'config.json'), 'utf8'))).toEqual({
      workspace_id: cli.platform.bootstrap.workspaceId,
      vpc_id: cli.platform.bootstrap.vpcId,
    });
    expect(await mode(path.join(cli.dir, 'credentials.json'))).toBe(0o600);
    expect(await mode(path.join(cli.dir, 'config.json'))).toBe(0o600);
    const sessions = await cli.platform.api(cli.platform.bootstrap.token).get('/api/v1/cli-sessions');
    expect(sessions.body.items.map((s: { name: string }) => s.name)).toContain(`pier cli ${os.hostname()}`.slice(0, 63));
  });

  it('refuses a token the API refuses, and writes nothing', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pier-cli-bad-'));
    const r = await runCli(cli.bin, ['login', '--api-url', cli.platform.gatewayUrl], { PIER_CONFIG_DIR: dir }, `sk-${'0'.repeat(64)}\n`);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('pier: the token was refused: invalid or expired API key (invalid_api_key)\n');
    await expect(stat(path.join(dir, 'credentials.json'))).rejects.toThrow();
    const empty = await runCli(cli.bin, ['login', '--api-url', cli.platform.gatewayUrl], { PIER_CONFIG_DIR: dir }, '');
    expect(empty).toMatchObject({ code: 2, stderr: expect.stringContaining('no token given') });
    await rm(dir, { recursive: true, force: true });
  });

  it('shows who the CLI acts as, for people and for scripts', async () => {
    const r = await cli.pier(['whoami']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^user\s+owner@localhost$/m);
    expect(r.stdout).toMatch(/^role\s+owner$/m);
    const me = await cli.json(['whoami']);
    expect(me).toMatchObject({
      email: cli.platform.bootstrap.email,
      api_url: cli.platform.gatewayUrl,
      workspace: { id: cli.platform.bootstrap.workspaceId },
      vpc: { name: 'default' },
    });
  });

  it('refuses to read a credentials file others can read, and says how to fix it', async () => {
    const file = path.join(cli.dir, 'credentials.json');
    await chmod(file, 0o644);
    const r = await cli.pier(['whoami']);
    await chmod(file, 0o600);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`chmod 600 ${file}`);
    expect(r.stderr).toContain('(insecure_file)');
    expect(r.stdout).toBe('');
  });
});

describe('pier workspaces and vpcs', () => {
  it('lists them and switches the config with use, by name', async () => {
    const owner = cli.platform.api(cli.platform.bootstrap.token);
    const ws = (await owner.post('/api/v1/workspaces', { name: 'acme' })).body;
    const staging = (await owner.post(`/api/v1/workspaces/${ws.id}/vpcs`, { name: 'staging' })).body;
    const list = await cli.pier(['workspaces', 'list']);
    expect(list.stdout).toMatch(/^\*\s+default\s+owner\s/m);
    expect(list.stdout).toMatch(/^\s+acme\s+owner\s/m);

    expect((await cli.pier(['workspaces', 'use', 'acme'])).code).toBe(0);
    expect((await cli.json(['vpcs', 'list'])).map((v: { name: string }) => v.name).sort()).toEqual(['default', 'staging']);
    expect((await cli.pier(['vpcs', 'use', 'staging'])).code).toBe(0);
    expect(JSON.parse(await readFile(path.join(cli.dir, 'config.json'), 'utf8'))).toEqual({ workspace_id: ws.id, vpc_id: staging.id });
    const missing = await cli.pier(['vpcs', 'use', 'nowhere']);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('(vpc_not_found)') });

    // --workspace overrides the config for one command, in that workspace's default VPC.
    const other = await cli.json(['--workspace', 'default', 'whoami']);
    expect(other.workspace.id).toBe(cli.platform.bootstrap.workspaceId);
    expect((await cli.pier(['workspaces', 'use', 'default'])).code).toBe(0);
  });
});

describe('pier keys', () => {
  it('creates a key printed once (stdout is the key alone), lists its prefix, and revokes it', async () => {
    const created = await cli.pier(['keys', 'create', 'ci', '--expires-in-days', '30', '--scope', 'deploy']);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk-[0-9a-f]{64}$/);
    expect(created.stderr).toContain('only time it is shown');
    expect((await cli.platform.api(key).get('/api/v1/workspaces')).status).toBe(200);

    const list = await cli.pier(['keys', 'list']);
    expect(list.stdout).toContain(key.slice(0, 12));
    expect(list.stdout).not.toContain(key);
    expect(list.stdout).toMatch(/^ci\s+sk-\S+\s+deploy\s/m);

    const refused = await cli.pier(['keys', 'revoke', 'ci']);
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('without --yes') });
    expect((await cli.pier(['keys', 'revoke', 'ci', '--yes'])).code).toBe(0);
    expect((await cli.platform.api(key).get('/api/v1/workspaces')).status).toBe(401);
  });
});

describe('pier secrets', () => {
  it('creates from pairs and a dotenv file, lists keys, never values, and deletes', async () => {
    const env = path.join(cli.dir, '..', 'prod.env');
    await writeFile(env, '# production\nexport API_KEY="abc\\n123"\nREGION=eu-west # where\nEMPTY=\n');
    const created = await cli.json(['secrets', 'create', 'app', 'TOKEN=t0p=s3cret', '--from-env-file', env]);
    expect(created.keys.sort()).toEqual(['API_KEY', 'EMPTY', 'REGION', 'TOKEN']);
    const shown = await cli.pier(['secrets', 'show', 'app']);
    expect(shown.stdout).toMatch(/^keys\s+API_KEY,EMPTY,REGION,TOKEN$/m);
    for (const value of ['t0p=s3cret', 'abc', 'eu-west']) expect(shown.stdout + (await cli.pier(['secrets', 'list'])).stdout).not.toContain(value);
    expect((await cli.pier(['secrets', 'delete', 'app', '--yes'])).code).toBe(0);
    expect((await cli.pier(['secrets', 'show', 'app'])).code).toBe(1);
    const bad = await cli.pier(['secrets', 'create', 'x', 'novalue']);
    expect(bad).toMatchObject({ code: 2, stderr: 'pier: "novalue" is not KEY=VALUE (invalid_argument)\n' });
  });
});

describe('errors and exit codes', () => {
  it('says the API error and code on stderr (JSON with --json), exits 1; usage errors exit 2', async () => {
    const invalid = await cli.pier(['services', 'create', 'tick', '--type', 'cron']);
    expect(invalid).toMatchObject({ code: 1, stdout: '', stderr: 'pier: cron_schedule: required for cron services (invalid_request, field cron_schedule)\n' });
    const asJson = await cli.pier(['--json', 'services', 'create', 'tick', '--type', 'cron']);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stderr)).toEqual({ error: 'cron_schedule: required for cron services', code: 'invalid_request', field: 'cron_schedule' });
    expect(await cli.pier(['services', 'show', 'nope'])).toMatchObject({ code: 1, stderr: expect.stringContaining('(service_not_found)') });
    expect((await cli.pier(['frobnicate'])).code).toBe(2);
    expect((await cli.pier(['services', 'deploy', 'web'])).code).toBe(2);
    expect((await cli.pier(['services', 'create', 'x', '--port', 'eighty'])).code).toBe(2);
    const nowhere = await runCli(cli.bin, ['whoami'], { PIER_CONFIG_DIR: path.join(cli.dir, 'none') });
    expect(nowhere).toMatchObject({ code: 1, stderr: expect.stringContaining('run pier login (not_logged_in)') });
  });
});

describe('pier --help', () => {
  it('answers on every command with an example', async () => {
    const { buildProgram } = await import('../../packages/cli/src/program.ts');
    const leaves: string[][] = [];
    const walk = (c: ReturnType<typeof buildProgram>, trail: string[]) => {
      for (const sub of c.commands) {
        if (sub.name() === 'help') continue;
        if (sub.commands.length) walk(sub, [...trail, sub.name()]);
        else leaves.push([...trail, sub.name()]);
      }
    };
    walk(buildProgram(), []);
    expect(leaves.length).toBeGreaterThan(30);
    for (const leaf of leaves) {
      const r = await cli.pier([...leaf, '--help']);
      expect(r.code, leaf.join(' ')).toBe(0);
      expect(r.stdout, leaf.join(' ')).toContain(`Examples:\n  $ pier ${leaf.join(' ')}`);
    }
  }, 120_000);
});

describe('pier logout', () => {
  it('revokes the CLI session and removes its token', async () => {
    const { token } = JSON.parse(await readFile(path.join(cli.dir, 'credentials.json'), 'utf8'));
    const r = await cli.pier(['logout']);
    expect(r).toMatchObject({ code: 0, stdout: expect.stringContaining('revoked') });
    expect((await cli.platform.api(token).get('/api/v1/workspaces')).status).toBe(401);
    await expect(stat(path.join(cli.dir, 'credentials.json'))).rejects.toThrow();
    expect((await cli.pier(['whoami'])).code).toBe(1);
  });
});

describe('the token prompt on a terminal', () => {
  it('asks for the API URL, then the token without echoing it', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pier-cli-tty-'));
    // util-linux `script` gives the CLI a real pseudo-terminal; we type into it.
    const child = spawn('script', ['-qfec', `${process.execPath} ${cli.bin} login`, '/dev/null'], { env: { ...process.env, PIER_CONFIG_DIR: dir } });
    let screen = '';
    child.stdout.on('data', (d) => (screen += d));
    const waitFor = async (text: string) => {
      for (let i = 0; i < 100 && !screen.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      expect(screen).toContain(text);
    };
    await waitFor('API URL [');
    child.stdin.write(`${cli.platform.gatewayUrl}\r`);
    await waitFor('input hidden): ');
    child.stdin.write(`${cli.platform.bootstrap.token}\r`);
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
    expect(code).toBe(0);
    expect(screen).toContain('Logged in to');
    expect(screen).not.toContain(cli.platform.bootstrap.token);
    expect(JSON.parse(await readFile(path.join(dir, 'credentials.json'), 'utf8')).api_url).toBe(cli.platform.gatewayUrl);
    await rm(dir, { recursive: true, force: true });
  });
});

describe('the package', () => {
  it('installs with npm install -g as one file with no dependencies, and runs', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pier-cli-pack-'));
    await exec('pnpm', ['--silent', 'build'], { cwd: CLI_ROOT });
    await exec('pnpm', ['pack', '--pack-destination', dir], { cwd: CLI_ROOT });
    const tarball = path.join(dir, 'pier-cli-0.1.0.tgz');
    const { stdout: files } = await exec('tar', ['-tzf', tarball]);
    expect(files.trim().split('\n').sort()).toEqual(['package/README.md', 'package/dist/pier.cjs', 'package/package.json']);
    const manifest = JSON.parse((await exec('tar', ['-xzOf', tarball, 'package/package.json'])).stdout);
    expect(manifest.dependencies).toBeUndefined();
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) expect(manifest.scripts?.[hook]).toBeUndefined();
    const { stdout: installed } = await exec('npm', ['install', '-g', '--prefix', path.join(dir, 'prefix'), tarball]);
    expect(installed).toContain('added 1 package');
    const { stdout: version } = await exec(path.join(dir, 'prefix', 'bin', 'pier'), ['--version']);
    expect(version.trim()).toBe('0.1.0');
    await rm(dir, { recursive: true, force: true });
  }, 120_000);
});
