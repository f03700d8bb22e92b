import type { Response } from 'express';
import type { ServerSentEvent } from './route.ts';
import { RECONNECT_EVENT } from './drain.ts';

/**
 * Writes server-sent events until they end or the client goes; a comment when quiet for
 * `keepAliveMs`. When `streamsEnd` aborts (the instance stops, drain.ts) the stream ends
 * with a `reconnect` event: `gone` is aborted so the events' producer stops as if the
 * client had left.
 */
export async function writeEvents(
  res: Response,
  status: number,
  events: AsyncIterable<ServerSentEvent>,
  gone: AbortController,
  keepAliveMs: number,
  streamsEnd?: AbortSignal,
): Promise<void> {
  res.writeHead(status, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  // Proxies and clients that close idle connections see a comment line at least this often.
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
  let restarting = false;
  const restart = () => {
    restarting = true;
    gone.abort();
  };
  if (streamsEnd?.aborted) restart();
  else streamsEnd?.addEventListener('abort', restart, { once: true });
  try {
    for await (const e of events) {
      if (gone.signal.aborted) break;
      res.write(`${e.id ? `id: ${e.id.replace(/[\r\n]/g, '')}\n` : ''}${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
    }
  } finally {
    clearInterval(keepAlive);
    streamsEnd?.removeEventListener('abort', restart);
    if (restarting && !res.writableEnded) res.write(RECONNECT_EVENT);
    res.end();
  }
}
