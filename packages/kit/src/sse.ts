import type { Response } from 'express';
import type { ServerSentEvent } from './route.ts';

/** Writes server-sent events until they end or the client goes; a comment when quiet for `keepAliveMs`. */
export async function writeEvents(
  res: Response,
  status: number,
  events: AsyncIterable<ServerSentEvent>,
  gone: AbortSignal,
  keepAliveMs: number,
): Promise<void> {
  res.writeHead(status, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  // Proxies and clients that close idle connections see a comment line at least this often.
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
  try {
    for await (const e of events) {
      if (gone.aborted) break;
      res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
    }
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}
