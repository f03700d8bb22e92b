// A shell in a running replica, as the domain needs it: which replica, then a process
// attached to it. cluster/docker-exec.ts and cluster/kubernetes-exec.ts implement it.
import type { Readable } from 'node:stream';
import type { WorkloadRef } from '../cluster-port.ts';

/** A replica a shell can attach to. */
export interface ShellReplica {
  /** The replica's number (0, 1, ...), as in logs and the replica query parameter. */
  replica: string;
  /** The adapter's own handle of it (a container id, a pod name). */
  handle: string;
}

export interface ShellOptions {
  /** The argv to run. */
  command: string[];
  tty: boolean;
  /** The service's user (run_as_user), so a shell can do what the service can, no more. */
  user: number;
  cols?: number;
  rows?: number;
}

export interface ShellProcess {
  /** What the process prints: with a TTY stdout and stderr are one stream; without, both arrive here in order. */
  output: Readable;
  /**
   * Hands bytes to the process's standard input. False once what waits for it is over a
   * small bound (the process is not reading): stop taking input until `drained()`.
   */
  write(data: Buffer): boolean;
  /** Resolves once the input written so far is under the bound again (or the process is gone). */
  drained(): Promise<void>;
  /** Closes the process's standard input (EOF). */
  endInput(): void;
  resize(cols: number, rows: number): Promise<void>;
  /** The process's exit code once it ended on its own (null when it was killed or the code is unknown). */
  exited: Promise<number | null>;
  /** Ends the process and what it started, now (the client left, a timeout). */
  kill(): Promise<void>;
}

export interface ShellPort {
  /** Running replicas of the service's current deployment, in replica order. */
  runningReplicas(ref: WorkloadRef): Promise<ShellReplica[]>;
  open(ref: WorkloadRef, replica: ShellReplica, opts: ShellOptions): Promise<ShellProcess>;
}
