import type http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';

// The pod exec subresource of the fake Kubernetes API: the WebSocket channel protocol as the
// API server speaks it (subprotocol negotiation, v5's close-a-channel frame, the final status
// on channel 3), with the command run as a local process in place of a container. As a
// kubelet does, it leaves the process running when the client goes: ending it is the
// client's business.

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;
const CLOSE = 255;
export const V5 = 'v5.channel.k8s.io';
export const V4 = 'v4.channel.k8s.io';

export interface FakeExecSession {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  tty: boolean;
  protocol: string;
  /** Terminal sizes the client sent, in order. */
  resizes: { Width: number; Height: number }[];
  /** Whether the client closed stdin with a v5 close frame. */
  stdinClosed: boolean;
  process: ChildProcess;
  /** The process's exit code, once it ended (null when a signal ended it). */
  exit?: number | null;
}

export class FakeExec {
  /** The subprotocols the server accepts, most preferred first (a test drops v5 to see the fallback). */
  protocols = [V5, V4];
  readonly sessions: FakeExecSession[] = [];
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => this.protocols.find((p) => offered.has(p)) ?? false,
  });

  /** Handles an upgrade to `.../pods/{pod}/exec`, given the pod as stored (undefined when there is none). */
  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, target: { namespace: string; pod: string }, pod: Record<string, any> | undefined): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const refuse = (code: number, message: string) => {
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code });
      socket.end(
        `HTTP/1.1 ${code} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    if (!pod) return refuse(404, `pods "${target.pod}" not found`);
    const container = url.searchParams.get('container') ?? pod.spec.containers[0].name;
    // As the API server: any container of the pod, an init container included (while it runs).
    if (![...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c: { name: string }) => c.name === container))
      return refuse(400, `container ${container} is not valid for pod ${target.pod}`);
    const status = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((c: { name: string }) => c.name === container);
    if (pod.status?.phase !== 'Running' && !status?.state?.running) return refuse(400, `pod ${target.pod} is not running`);
    const command = url.searchParams.getAll('command');
    if (!command.length) return refuse(400, 'you must specify at least one command for the container');
    // As the real API server: an exec must take at least one stream.
    if (!['stdin', 'stdout', 'stderr'].some((s) => url.searchParams.get(s) === 'true'))
      return refuse(400, 'you must specify at least 1 of stdin, stdout, stderr');
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const child = spawn(command[0]!, command.slice(1), { stdio: 'pipe', detached: true });
      const session: FakeExecSession = {
        ...target,
        container,
        command,
        tty: url.searchParams.get('tty') === 'true',
        protocol: ws.protocol,
        resizes: [],
        stdinClosed: false,
        process: child,
      };
      this.sessions.push(session);
      const send = (channel: number, data: Buffer) => ws.readyState === ws.OPEN && ws.send(Buffer.concat([Buffer.from([channel]), data]));
      child.stdout!.on('data', (d: Buffer) => send(STDOUT, d));
      // With a TTY there is one stream, as a terminal has.
      child.stderr!.on('data', (d: Buffer) => send(session.tty ? STDOUT : STDERR, d));
      child.stdin!.on('error', () => undefined);
      child.on('error', (err) => {
        send(STATUS, Buffer.from(JSON.stringify({ status: 'Failure', message: String(err), reason: 'InternalError' })));
        ws.close();
      });
      child.on('close', (code) => {
        session.exit = code;
        const status =
          code === 0
            ? { metadata: {}, status: 'Success' }
            : {
                metadata: {},
                status: 'Failure',
                message: `command terminated with non-zero exit code: ${code}`,
                reason: 'NonZeroExitCode',
                details: { causes: [{ reason: 'ExitCode', message: String(code ?? 137) }] },
              };
        send(STATUS, Buffer.from(JSON.stringify(status)));
        ws.close(1000);
      });
      let waiting = false;
      ws.on('message', (data: Buffer) => {
        const channel = data[0];
        const rest = data.subarray(1);
        if (channel === STDIN) {
          if (child.stdin!.write(rest) || waiting) return;
          // As a kubelet: input the process does not take is not read from the socket either.
          waiting = true;
          ws.pause();
          child.stdin!.once('drain', () => {
            waiting = false;
            ws.resume();
          });
        } else if (channel === RESIZE) session.resizes.push(JSON.parse(rest.toString('utf8')));
        else if (channel === CLOSE && session.protocol === V5 && rest[0] === STDIN) {
          session.stdinClosed = true;
          child.stdin!.end();
        }
      });
    });
  }

  /** Ends what is still running (the fake is stopping). */
  stop(): void {
    for (const s of this.sessions) if (s.exit === undefined) s.process.kill('SIGKILL');
    for (const ws of this.wss.clients) ws.terminate();
  }
}
