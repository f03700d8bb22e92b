import { describe, expect, it } from 'vitest';
import { readEvents } from '../src/event-stream.ts';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(bytes.encode(chunk));
      c.close();
    },
  });
}

describe("the console's event-stream reader", () => {
  it('yields events split across chunks, skips keep-alive comments, joins multi-line data', async () => {
    const events = [];
    for await (const e of readEvents(
      streamOf([': keep-alive\n\nevent: li', 'ne\ndata: {"message":"a"}\n', '\ndata: one\ndata: two\n\n', 'event: reconnect\ndata: {}\n\n']),
    )) {
      events.push(e);
    }
    expect(events).toEqual([
      { event: 'line', data: '{"message":"a"}' },
      { event: 'message', data: 'one\ntwo' },
      { event: 'reconnect', data: '{}' },
    ]);
  });

  it('decodes a character split between chunks', async () => {
    const euro = new TextEncoder().encode('data: €\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(euro.slice(0, 7));
        c.enqueue(euro.slice(7));
        c.close();
      },
    });
    const events = [];
    for await (const e of readEvents(body)) events.push(e);
    expect(events).toEqual([{ event: 'message', data: '€' }]);
  });
});
