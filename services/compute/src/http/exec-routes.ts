import { z } from 'zod';
import { defineUpgrade, queryFlag, queryList, type UpgradeRoute } from '@pier/kit';
import type { RawData, WebSocket } from 'ws';
import { prepareShell, ShellSession, type PreparedShell, type ShellLimits } from '../domain/exec.ts';
import type { ComputeContext } from '../domain/context.ts';
import { BASE, scope, serviceParams } from './service-routes.ts';

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

/** Joins the socket and the session; `early` are the frames that came while the process started. */
function attach(ctx: ComputeContext, ws: WebSocket, session: ShellSession, early: Frame[]): void {
  pump(session, ws);
  const onFrame = (data: RawData, isBinary: boolean) => {
    session.activity();
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) return session.process.write(bytes);
    let message: z.infer<typeof control>;
    try {
      message = control.parse(JSON.parse(bytes.toString('utf8')));
    } catch {
      return sendJson(ws, { type: 'error', message: 'a text frame must be {"type":"resize","cols":N,"rows":M} or {"type":"eof"}' });
    }
    if (message.type === 'eof') session.process.endInput();
    else void session.process.resize(message.cols, message.rows).catch((err: unknown) => ctx.log.warn({ err: String(err) }, 'a shell resize failed'));
  };
  for (const [data, isBinary] of early) onFrame(data, isBinary);
  ws.on('message', onFrame);
  ws.on('close', () => void session.end('client_closed'));
  void session.ended.then(async ({ reason, code }) => {
    if (reason === 'exited') {
      // Everything the process printed goes out before the exit message.
      const output = session.process.output;
      if (!output.readableEnded) await new Promise((r) => (output.once('end', r), output.once('close', r), setTimeout(r, 2000).unref()));
      sendJson(ws, { type: 'exit', code });
    } else if (reason === 'idle_timeout' || reason === 'max_duration') {
      sendJson(ws, { type: 'error', message: reason === 'idle_timeout' ? 'the session was idle too long' : 'the session reached its maximum length' });
    }
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
        const prepared = await prepareShell(ctx, scope(params), params.serviceID, { command: query.command, replica: query.replica, tty: query.tty });
        return { ...prepared, ...(query.cols && query.rows ? { size: { cols: query.cols, rows: query.rows } } : {}) };
      },
      connected: (ws, prepared, { identity, log }) => {
        const caller = { userId: identity.subject, email: identity.email };
        const early: Frame[] = [];
        const hold = (data: RawData, isBinary: boolean) => early.push([data, isBinary]);
        ws.on('message', hold);
        ShellSession.open(ctx, prepared, caller, limits, prepared.size).then(
          (session) => {
            ws.off('message', hold);
            if (ws.readyState !== ws.OPEN) return void session.end('client_closed');
            attach(ctx, ws, session, early);
          },
          (err: unknown) => {
            log.warn({ err: String(err), service: prepared.service.id }, 'a shell could not start');
            sendJson(ws, { type: 'error', message: err instanceof Error ? err.message : 'the shell could not start' });
            ws.close(1011);
          },
        );
      },
    }),
  ];
}
