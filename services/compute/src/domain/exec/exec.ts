// A shell in a running replica (GET exec, upgraded to a WebSocket). Judged before the
// handshake: the service exists and runs (409 otherwise), the replica asked for runs. Each
// session is recorded as `service.exec.started` and `service.exec.ended` (who, which
// replica, which program with how many arguments, how long, how it ended) — never the
// arguments nor what went through it — and ends after an idle time or a maximum length.
import { randomUUID } from 'node:crypto';
import { ConflictError, NotFoundError, currentRequestContext, runWithRequestContext, type RequestContext } from '@pier/kit';
import type { Scope, Service } from '../records.ts';
import type { ShellProcess, ShellReplica } from './shell-port.ts';
import { getService } from '../services/services.ts';
import { events, type ExecRecord } from '../events.ts';
import { refOf, serviceNotFound, type ComputeContext } from '../context.ts';

export const DEFAULT_COMMAND = ['/bin/sh'];

export interface ShellRequest {
  /** The argv; `/bin/sh` when absent. */
  command?: string[];
  /** A replica number; the first running one when absent. */
  replica?: string;
  tty: boolean;
}

export interface ShellLimits {
  /** No input and no output for this long ends the session. */
  idleMs: number;
  /** No session lasts longer. */
  maxMs: number;
}

/** Who opened the shell (the identity's user), for the record. */
export interface ShellCaller {
  userId: string;
  email?: string;
}

export interface PreparedShell {
  service: Service;
  replica: ShellReplica;
  command: string[];
  tty: boolean;
}

/** Everything checked before the handshake: a refusal here is an ordinary JSON error. */
export async function prepareShell(ctx: ComputeContext, scope: Scope, serviceId: string, req: ShellRequest): Promise<PreparedShell> {
  const { service } = await getService(ctx, scope, serviceId);
  if (service.deleted_at) throw serviceNotFound();
  if (service.status !== 'running') {
    throw new ConflictError(`service is ${service.status}; a shell needs it running`, 'service_not_running');
  }
  const running = await ctx.shell.runningReplicas(refOf(service));
  const replica = req.replica === undefined ? running[0] : running.find((r) => r.replica === req.replica);
  if (!replica) {
    if (req.replica === undefined) throw new ConflictError('no replica of the service is running', 'service_not_running');
    throw new NotFoundError(`replica ${req.replica} is not running (running: ${running.map((r) => r.replica).join(', ') || 'none'})`, 'replica_not_found');
  }
  return { service, replica, command: req.command?.length ? req.command : DEFAULT_COMMAND, tty: req.tty };
}

/** A command line as it is recorded: its program's name and how many arguments, never the arguments. */
export function commandRecord(argv: string[]): { program: string; arg_count: number } {
  const first = argv[0] ?? '';
  return { program: first.replace(/\/+$/, '').split('/').pop() || first, arg_count: Math.max(argv.length - 1, 0) };
}

export type EndReason = 'exited' | 'client_closed' | 'idle_timeout' | 'max_duration' | 'failed';

/**
 * One open shell: the process, its limits, and its record. `end` is idempotent; the
 * transport learns the end through `ended` (to say so and close the socket).
 */
export class ShellSession {
  private readonly startedAt: number;
  /** Who opened the session, from where: its end is recorded in their name too (the audit log). */
  private readonly opener: RequestContext | undefined = currentRequestContext();
  private idle?: NodeJS.Timeout;
  private readonly max: NodeJS.Timeout;
  private finished?: Promise<void>;
  private resolveEnded!: (end: { reason: EndReason; code: number | null }) => void;
  /** How the session ended: its reason, and the exit code when the process ended on its own. */
  readonly ended = new Promise<{ reason: EndReason; code: number | null }>((resolve) => (this.resolveEnded = resolve));

  private constructor(
    private readonly ctx: ComputeContext,
    private readonly prepared: PreparedShell,
    /** What both of the session's events say of it. */
    private readonly record: ExecRecord,
    readonly process: ShellProcess,
    private readonly limits: ShellLimits,
  ) {
    this.startedAt = ctx.now().getTime();
    this.max = setTimeout(() => void this.end('max_duration'), limits.maxMs);
    this.activity();
    process.exited.then(
      (code) => void this.end('exited', code),
      () => void this.end('failed'),
    );
  }

  static async open(
    ctx: ComputeContext,
    prepared: PreparedShell,
    caller: ShellCaller,
    limits: ShellLimits,
    size?: { cols: number; rows: number },
  ): Promise<ShellSession> {
    const { service, replica, command, tty } = prepared;
    const process = await ctx.shell.open(refOf(service), replica, { command, tty, user: service.run_as_user, ...size });
    const record: ExecRecord = { session_id: randomUUID(), user_id: caller.userId, replica: replica.replica, ...commandRecord(command) };
    await ctx.store.transaction((tx) => tx.writeEvent(events.execStarted(service, { ...record, email: caller.email ?? null, tty })));
    ctx.eventsWritten();
    // An open shell keeps an on_demand service awake (domain/elastic).
    const shells = ctx.elastic?.shells;
    shells?.set(service.id, (shells.get(service.id) ?? 0) + 1);
    return new ShellSession(ctx, prepared, record, process, limits);
  }

  /** Input or output went through: the idle clock starts again. */
  activity(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => void this.end('idle_timeout'), this.limits.idleMs);
  }

  /** Ends the session (killing the process unless it ended by itself) and records it, once. */
  end(reason: EndReason, code: number | null = null): Promise<void> {
    this.finished ??= (async () => {
      clearTimeout(this.idle);
      clearTimeout(this.max);
      if (reason !== 'exited') await this.process.kill().catch((err: unknown) => this.ctx.log.warn({ err: String(err) }, 'could not end a shell process'));
      const { service } = this.prepared;
      const shells = this.ctx.elastic?.shells;
      if (shells) shells.set(service.id, Math.max(0, (shells.get(service.id) ?? 1) - 1));
      const durationMs = this.ctx.now().getTime() - this.startedAt;
      this.resolveEnded({ reason, code });
      const write = () =>
        this.ctx.store.transaction((tx) => tx.writeEvent(events.execEnded(service, { ...this.record, duration_ms: durationMs, exit_code: code, reason })));
      await (this.opener ? runWithRequestContext(this.opener, write) : write())
        .then(() => this.ctx.eventsWritten())
        .catch((err: unknown) => this.ctx.log.warn({ err: String(err), service: service.id }, 'could not record the end of a shell session'));
    })();
    return this.finished;
  }
}
