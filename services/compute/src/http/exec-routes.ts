import { z } from 'zod';
import { defineUpgrade, queryFlag, queryList, vpcScope, type UpgradeRoute } from '@pier/kit';
import type { RawData, WebSocket } from 'ws';
import { prepareShell, ShellSession, type PreparedShell, type ShellLimits } from '../domain/exec/exec.ts';
import type { ComputeContext } from '../domain/context.ts';
import { BASE, serviceParams } from './service-routes.ts';

// The shell's wire protocol. Binary frames are bytes: stdin from the client, output from the
// server. Text frames are JSON control messages:
//   client  {"type":"resize","cols":N,"rows":M}   the terminal's size changed
//   client  {"type":"eof"}                         stdin is finished (what ^D is without a TTY)
//   server  {"type":"exit","code":N}               the command ended; a close (1000) follows
//   server  {"type":"error","message":"..."}       the shell could not start (close 1011), or
//                                                  it was ended by a limit (close 1000)
// Closing the socket ends the command and everything it started.

const SIZE = z.coerce.number().int().min(1).max(1000);

const execQuery = z.object({
  command: queryList(z.string().min(1, 'must not be empty').max(4096), {
    max: 64,
    description: 'The argv, one value per argument (repeat the parameter); default `/bin/sh`',
  }),
  replica: z.string().min(1).max(253).optional().describe('The replica (as in logs); default the first running one'),
  tty: queryFlag(true, 'Allocate a terminal'),
  cols: SIZE.optional().describe('Initial terminal width (with tty)'),
  rows: SIZE.optional().describe('Initial terminal height (with tty)'),
});

const control = z.discriminatedUnion('type', [z.object({ type: z.literal('resize'), cols: SIZE, rows: SIZE }), z.object({ type: z.literal('eof') })]);

function sendJson(ws: WebSocket, message: object): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
}

/** Output past this much unsent pauses the process's output until the socket catches up. */
const HIGH_WATER = 1 << 20;

/** Where a session's output goes: the socket, with backpressure (a slow client pauses the process's output). */
function pump(session: ShellSession, ws: WebSocket): void {
  const output = session.process.output;
  output.on('data', (chunk: Buffer) => {
    session.activity();
    if (ws.readyState !== ws.OPEN) return;
    // The callback runs once the frame is handed to the network: by then the backlog shrank.
    ws.send(chunk, { binary: true }, () => output.isPaused() && ws.bufferedAmount < HIGH_WATER / 4 && output.resume());
    if (ws.bufferedAmount > HIGH_WATER) output.pause();
  });
}

type Frame = [data: RawData, isBinary: boolean];

/**
 * The largest frame a client may send (a bigger one closes the socket with 1009): ws holds a
 * frame whole before handing it over, and a terminal or a pipe sends 64 KiB at most.
 */
export const MAX_FRAME = 1 << 20;
/** While the socket is not read, a ping this often finds a client that went (the write fails). */
const PAUSED_PING_MS = 5000;

/**
 * Stdin with backpressure: while the process does not take its input, the socket is not read
 * (TCP pushes back on the client), so compute holds at most a frame and the process's small
 * buffer, whatever the client sends. A paused socket cannot see a close: pings find a client
 * that went away.
 */
function stdinOf(session: ShellSession, ws: WebSocket): (bytes: Buffer) => void {
  let paused = false;
  return (bytes) => {
    if (session.process.write(bytes) || paused) return;
    paused = true;
    ws.pause();
    const ping = setInterval(() => ws.readyState === ws.OPEN && ws.ping(), PAUSED_PING_MS);
    void session.process.drained().then(() => {
      clearInterval(ping);
      paused = false;
      ws.resume();
    });
  };
}

/** Joins the socket and the session; `early` are the frames that came while the process started. */
function attach(ctx: ComputeContext, ws: WebSocket, session: ShellSession, early: Frame[]): void {
  pump(session, ws);
  const stdin = stdinOf(session, ws);
  const onFrame = (data: RawData, isBinary: boolean) => {
    session.activity();
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (isBinary) return stdin(bytes);
    let message: z.infer<typeof control>;
    try {
      message = control.parse(JSON.parse(bytes.toString('utf8')));
    } catch {
      return sendJson(ws, { type: 'error', message: 'a text frame must be {"type":"resize","cols":N,"rows":M} or {"type":"eof"}' });
    }
    if (message.type === 'eof') session.process.endInput();
    else void session.process.resize(message.cols, message.rows).catch((err: unknown) => ctx.log.warn({ err: String(err) }, 'a shell resize failed'));
  };
  ws.on('message', onFrame);
  ws.on('close', () => void session.end('client_closed'));
  // Read again (connected() stopped while the process started); new frames come in a later
  // tick, after the early ones, which may stop it once more.
  ws.resume();
  for (const [data, isBinary] of early) onFrame(data, isBinary);
  void session.ended.then(async ({ reason, code }) => {
    if (reason === 'exited') {
      // Everything the process printed goes out before the exit message.
      const output = session.process.output;
      if (!output.readableEnded) await new Promise((r) => (output.once('end', r), output.once('close', r), setTimeout(r, 2000).unref()));
      sendJson(ws, { type: 'exit', code });
    } else if (reason === 'idle_timeout' || reason === 'max_duration') {
      sendJson(ws, { type: 'error', message: reason === 'idle_timeout' ? 'the session was idle too long' : 'the session reached its maximum length' });
    }
    // The client's answer to the close must be read, even if its input was waiting.
    ws.resume();
    if (ws.readyState === ws.OPEN) ws.close(1000);
  });
}

export function execRoutes(ctx: ComputeContext, limits: ShellLimits): UpgradeRoute[] {
  return [
    defineUpgrade({
      path: `${BASE}/{serviceID}/exec`,
      summary: 'A shell in a running replica, over a WebSocket: binary frames are stdin and output, text frames JSON control (resize, eof; exit, error)',
      tag: 'services',
      // A shell reads every secret the container holds.
      access: 'Admin',
      maxPayload: MAX_FRAME,
      params: serviceParams,
      query: execQuery,
      responses: {
        101: { description: 'Switching to the WebSocket protocol: the shell is starting' },
        400: { description: 'Invalid query' },
        403: { description: 'Owner or Admin only' },
        404: { description: 'Service or replica not found' },
        409: { description: 'The service is not running' },
        426: { description: 'A plain GET: this endpoint only upgrades to a WebSocket' },
        503: { description: 'The cluster cannot be reached' },
      },
      accept: async ({ params, query }): Promise<PreparedShell & { size?: { cols: number; rows: number } }> => {
        const prepared = await prepareShell(ctx, vpcScope(params), params.serviceID, { command: query.command, replica: query.replica, tty: query.tty });
        return { ...prepared, ...(query.cols && query.rows ? { size: { cols: query.cols, rows: query.rows } } : {}) };
      },
      connected: (ws, prepared, { identity, log }) => {
        const caller = { userId: identity.subject, email: identity.email };
        const early: Frame[] = [];
        const hold = (data: RawData, isBinary: boolean) => early.push([data, isBinary]);
        ws.on('message', hold);
        // Not read while the process starts, so `early` holds what had already come, no more.
        ws.pause();
        ShellSession.open(ctx, prepared, caller, limits, prepared.size).then(
          (session) => {
            ws.off('message', hold);
            if (ws.readyState !== ws.OPEN) return void session.end('client_closed');
            attach(ctx, ws, session, early);
          },
          (err: unknown) => {
            log.warn({ err: String(err), service: prepared.service.id }, 'a shell could not start');
            sendJson(ws, { type: 'error', message: err instanceof Error ? err.message : 'the shell could not start' });
            ws.resume();
            ws.close(1011);
          },
        );
      },
    }),
  ];
}
