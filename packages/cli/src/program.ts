// The `pier` command tree. Each group of commands lives in commands/<group>.ts and is
// registered here (sub-groups such as `services env`, `logs`, `shell`, `build` by their
// group's file); a new endpoint's command arrives the same way.
import { Command, CommanderError } from 'commander';
import { register as registerAuth } from './commands/auth.ts';
import { register as registerWorkspaces } from './commands/workspaces.ts';
import { register as registerServices } from './commands/services.ts';
import { register as registerDatabases } from './commands/databases.ts';
import { register as registerSecrets } from './commands/secrets.ts';
import { register as registerKeys } from './commands/keys.ts';
import { register as registerEvents } from './commands/events.ts';
import { register as registerWebhooks } from './commands/webhooks.ts';
import { CliError } from './errors.ts';
import { Output } from './output.ts';
import { VERSION } from './version.ts';

export function buildProgram(): Command {
  const program = new Command('pier')
    .description('The Pier platform from the command line: services, databases, secrets and API keys.')
    .version(VERSION, '-v, --version')
    .option('--json', 'print the API objects as JSON, for scripts (errors as JSON on stderr)')
    .option('-w, --workspace <workspace>', 'workspace, by name or id (default: the one `pier workspaces use` chose)')
    .option('--vpc <vpc>', 'VPC, by name or id (default: the one `pier vpcs use` chose)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  program.addHelpText(
    'after',
    `
Getting started:
  $ pier login                      # API URL and a token (hidden), kept as a CLI session
  $ pier services create web --image pier/tiny-http:1 --wait
  $ pier db create orders --external-access --wait && pier db connect orders

Files: credentials.json and config.json in $PIER_CONFIG_DIR (default ~/.config/pier), mode 0600.
Exit status: 0 on success, 1 when the API or the operation failed, 2 for a usage error.`,
  );
  registerAuth(program);
  registerWorkspaces(program);
  registerServices(program);
  registerDatabases(program);
  registerSecrets(program);
  registerKeys(program);
  registerEvents(program);
  registerWebhooks(program);
  // Every sub-command: same error handling (thrown, not exit()), same help after errors.
  const configure = (c: Command) => {
    c.exitOverride().showHelpAfterError('(add --help for usage)');
    c.commands.forEach(configure);
  };
  program.commands.forEach(configure);
  return program;
}

/** Runs `pier` on `argv` (process.argv) and returns the exit status. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, successfully; commander printed the rest.
      return err.exitCode === 0 ? 0 : 2;
    }
    new Output(program.opts().json === true).error(err);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
