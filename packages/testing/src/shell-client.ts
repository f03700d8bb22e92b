import WebSocket from 'ws';

// A client of Pier's shell (exec) WebSocket for tests: what arrived (output bytes as text,
// control messages), how it closed, and ways to wait for either.

export interface ShellClient {
  ws: WebSocket;
  /** Every output byte so far, as UTF-8. */
  output(): string;
  /** The JSON control messages received (`exit`, `error`). */
  messages: { type: string; code?: number | null; message?: string }[];
  /** The close code and reason, once closed. */
  closed: Promise<{ code: number; reason: string }>;
  send(text: string): void;
  control(message: object): void;
  /** Resolves when the output matches (or throws after `ms`, with what did arrive). */
  waitFor(pattern: RegExp | string, ms?: number): Promise<string>;
}

/** `url` with this query: an array repeats its key (`command=sh&command=-c`). */
export function shellUrl(url: string, query: Record<string, string | string[]>): string {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) for (const one of [value].flat()) q.append(key, one);
  return q.size ? `${url}?${q}` : url;
}

/**
 * Opens a shell. Resolves once the handshake is done; rejects with the refusal's status
 * and JSON body when the server answers the handshake with an error instead.
 */
export function openShell(url: string, headers: Record<string, string> = {}): Promise<ShellClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const chunks: Buffer[] = [];
    const messages: ShellClient['messages'] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
    const output = () => Buffer.concat(chunks).toString('utf8');
    ws.on('message', (data: Buffer, isBinary) => {
      if (isBinary) chunks.push(data);
      else messages.push(JSON.parse(data.toString('utf8')));
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error(`refused: ${res.statusCode} ${body}`), { status: res.statusCode, body: body ? JSON.parse(body) : undefined })),
      );
    });
    ws.on('error', (err) => reject(err));
    ws.on('open', () =>
      resolve({
        ws,
        output,
        messages,
        closed,
        send: (text) => ws.send(Buffer.from(text), { binary: true }),
        control: (message) => ws.send(JSON.stringify(message)),
        waitFor: async (pattern, ms = 15_000) => {
          const deadline = Date.now() + ms;
          const matches = () => (typeof pattern === 'string' ? output().includes(pattern) : pattern.test(output()));
          while (!matches()) {
            if (Date.now() > deadline) throw new Error(`no ${pattern} in the shell's output after ${ms} ms; it printed: ${JSON.stringify(output())}`);
            await new Promise((r) => setTimeout(r, 25));
          }
          return output();
        },
      }),
    );
  });
}
