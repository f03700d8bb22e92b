// How every command is declared: commander for parsing and help, an action that gets a
// Context, and an example in every --help. A new command group is one file in commands/
// with a `register(program)` function, listed in program.ts.
import { type Command, InvalidArgumentError } from 'commander';
import { Context, type GlobalOptions } from './context.ts';

export type Action<A extends unknown[]> = (ctx: Context, ...args: A) => Promise<void>;

/** Runs `fn` with a Context made from the global options (--json, --workspace, --vpc). */
export function run<A extends unknown[]>(fn: Action<A>) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    await fn(new Context(command.optsWithGlobals() as GlobalOptions), ...(args.slice(0, -1) as A));
  };
}

/** Adds "Examples:" to a command's --help. */
export function examples(command: Command, ...lines: string[]): Command {
  return command.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

/** A sub-command group: `pier <name>` alone prints its help. */
export function group(program: Command, name: string, description: string): Command {
  const g = program.command(name).description(description);
  g.action(() => g.help());
  return g;
}

export function integer(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export const WAIT_TIMEOUT = ['--timeout <seconds>', 'how long --wait waits', integer, 300] as const;
