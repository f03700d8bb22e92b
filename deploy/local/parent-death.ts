import { which } from './which.ts';

/**
 * Children that stop when the launcher dies, however it dies. Ctrl-C and SIGTERM are
 * handled by the launcher, which stops everything in order; a SIGKILL (or a crash) leaves
 * it no chance, so the kernel does it: Linux's PR_SET_PDEATHSIG, set by util-linux's
 * `setpriv --pdeathsig` just before it executes the real command, sends the child a signal
 * when its parent exits. Each child gets the signal that makes it stop quickly and cleanly
 * (PostgreSQL: SIGINT, its fast shutdown). Where setpriv is missing (macOS), commands run
 * as they are and `available` is false, so the launcher can say so.
 */
export interface ParentDeath {
  available: boolean;
  /** The command and arguments that run `cmd args` with `signal` sent at the launcher's death. */
  wrap(cmd: string, args: string[], signal: 'SIGTERM' | 'SIGINT'): [string, string[]];
}

export function parentDeath(): ParentDeath {
  const setpriv = process.platform === 'linux' ? which('setpriv') : null;
  if (!setpriv) return { available: false, wrap: (cmd, args) => [cmd, args] };
  return { available: true, wrap: (cmd, args, signal) => [setpriv, ['--pdeathsig', signal, '--', cmd, ...args]] };
}
