// A shell in a running replica, in the browser: xterm.js (loaded when a shell is opened)
// over the API's exec WebSocket. Browsers cannot set headers on a WebSocket handshake, so
// the token goes as the `access_token` query parameter (the gateway takes it out before
// anything logs the URL). Binary frames are the terminal's bytes both ways; text frames are
// JSON control: the terminal's size to the server, the command's exit code from it. When
// the API restarts under a session it closes with 1012: a new shell is opened.
import { useEffect, useRef, useState } from 'preact/hooks';
import { tokenStore } from '../api.ts';
import type { OpenTerminal } from '../terminal.ts';
import { SERVICE, type SectionProps, type ServicePath } from './service-types.ts';

/** RFC 6455's "Service Restart", which the API sends when an instance stops (kit's drain.ts). */
const RECONNECT_CLOSE_CODE = 1012;
/** After a restart the API may take a few seconds to take connections again. */
const RECONNECT_TRIES = 10;

type State =
  | { kind: 'idle' }
  | { kind: 'connecting' | 'open' }
  | { kind: 'reconnecting'; attempt: number }
  | { kind: 'ended'; exitCode: number | null; closeCode: number; problem?: string; opened: boolean };

function execUrl(path: ServicePath, size: { cols: number; rows: number }): string {
  const filled = `${SERVICE}/exec`.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(path[name as keyof ServicePath]));
  const q = new URLSearchParams({ tty: 'true', cols: String(size.cols), rows: String(size.rows), access_token: tokenStore.get() ?? '' });
  return `${location.origin.replace(/^http/, 'ws')}${filled}?${q}`;
}

export function ShellSection({ service, path }: SectionProps) {
  const [state, setState] = useState<State>({ kind: 'idle' });
  const [session, setSession] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  const socket = useRef<WebSocket | null>(null);
  const running = service.status === 'running';

  useEffect(() => {
    if (session === 0) return;
    let term: OpenTerminal | null = null;
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const encoder = new TextEncoder();

    const connect = (attempt: number) => {
      if (stopped || !term) return;
      const t = term.term;
      const ws = new WebSocket(execUrl(path, { cols: t.cols, rows: t.rows }));
      ws.binaryType = 'arraybuffer';
      socket.current = ws;
      let opened = false;
      let exitCode: number | null = null;
      let problem: string | undefined;
      ws.onopen = () => {
        opened = true;
        setState({ kind: 'open' });
        t.focus();
      };
      ws.onmessage = (e: MessageEvent<ArrayBuffer | string>) => {
        if (typeof e.data !== 'string') return void t.write(new Uint8Array(e.data));
        const m = JSON.parse(e.data) as { type: string; code?: number | null; message?: string };
        if (m.type === 'exit') exitCode = m.code ?? null;
        if (m.type === 'error') problem = m.message;
      };
      ws.onclose = (e) => {
        if (stopped) return;
        const restarted = exitCode === null && e.code === RECONNECT_CLOSE_CODE;
        // A connection that fails while reconnecting is the API still starting: try again.
        const stillStarting = attempt > 0 && !opened && attempt < RECONNECT_TRIES;
        if (restarted || stillStarting) {
          if (restarted) t.write('\r\n\x1b[33m[the API restarted: opening a new shell; the previous one ended]\x1b[0m\r\n');
          const next = restarted ? 1 : attempt + 1;
          setState({ kind: 'reconnecting', attempt: next });
          retry = setTimeout(() => connect(next), 1000);
          return;
        }
        setState({ kind: 'ended', exitCode, closeCode: e.code, problem, opened: opened || attempt > 0 });
      };
    };

    setState({ kind: 'connecting' });
    void import('../terminal.ts').then(({ openTerminal }) => {
      if (stopped || !box.current) return;
      term = openTerminal(box.current, () => closeButton.current?.focus());
      term.term.onData((d) => socket.current?.readyState === WebSocket.OPEN && socket.current.send(encoder.encode(d)));
      term.term.onBinary((d) => socket.current?.readyState === WebSocket.OPEN && socket.current.send(Uint8Array.from(d, (c) => c.charCodeAt(0))));
      term.term.onResize(
        ({ cols, rows }) => socket.current?.readyState === WebSocket.OPEN && socket.current.send(JSON.stringify({ type: 'resize', cols, rows })),
      );
      connect(0);
    });
    return () => {
      stopped = true;
      clearTimeout(retry);
      socket.current?.close(1000);
      socket.current = null;
      term?.dispose();
    };
  }, [session]);

  const live = state.kind === 'connecting' || state.kind === 'open' || state.kind === 'reconnecting';
  return (
    <div class="panel" role="region" aria-labelledby="shell-title">
      <div class="panel-head">
        <h2 id="shell-title">Shell</h2>
        {live ? (
          <button type="button" ref={closeButton} onClick={() => socket.current?.close(1000)}>
            Close shell
          </button>
        ) : (
          <button type="button" class="primary" disabled={!running} onClick={() => setSession((n) => n + 1)}>
            {state.kind === 'ended' ? 'Open a new shell' : 'Open shell'}
          </button>
        )}
      </div>
      {!running && !live && <p class="muted">A shell opens in a running replica; this service is {service.status}.</p>}
      <p class="muted" role="status">
        {describe(state)}
      </p>
      {session > 0 && (
        <>
          <p class="hint">Keys go to the shell (Tab too); F6 moves the focus out of the terminal.</p>
          <div class="terminal" ref={box} />
        </>
      )}
    </div>
  );
}

function describe(s: State): string {
  switch (s.kind) {
    case 'idle':
      return '';
    case 'connecting':
      return 'Connecting…';
    case 'open':
      return 'Connected.';
    case 'reconnecting':
      return `The API restarted: reconnecting (try ${s.attempt} of ${RECONNECT_TRIES})…`;
    case 'ended':
      if (!s.opened) return 'Could not open a shell: the service must be running, and a shell needs the Owner or Admin role.';
      if (s.problem) return `Session ended: ${s.problem}${s.exitCode !== null ? ` (exit code ${s.exitCode})` : ''}.`;
      if (s.exitCode !== null) return `Session ended: exited with code ${s.exitCode}.`;
      return s.closeCode === 1000 ? 'Session closed.' : `Session ended: the connection closed (code ${s.closeCode}).`;
  }
}
