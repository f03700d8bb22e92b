/**
 * A named point between two steps of a long operation (after the cluster call, before the
 * commit, say) where a test can kill the process for real, to prove that the reconcilers
 * finish or undo what the crash left. Only `PIER_CRASH_AT=<name>` in the process's
 * environment arms one; it is read here, at the point, rather than at start-up, so the
 * knob costs nothing where it is not set. Never set it in production.
 */
export function crashPoint(name: string): void {
  if (process.env.PIER_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
