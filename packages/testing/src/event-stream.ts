// Reading a server-sent event stream (text/event-stream) in a test: the events with their
// JSON data, and the comment lines (keep-alives) in between, until the test has seen enough.

export interface ServerSentEventRead {
  /** The `id:` line, when the event had one. */
  id?: string;
  event?: string;
  data: any;
}

export interface EventStreamRead {
  events: ServerSentEventRead[];
  /** Comment lines, without the leading colon and space (`keep-alive`). */
  comments: string[];
}

/**
 * Reads `res`'s body until `enough(read)` holds, and returns what was read (the caller ends
 * the request, aborting its fetch). Fails after `timeoutMs`, saying what came.
 */
export async function readEventStream(res: Response, enough: (read: EventStreamRead) => boolean, timeoutMs = 20_000): Promise<EventStreamRead> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const read: EventStreamRead = { events: [], comments: [] };
  const deadline = Date.now() + timeoutMs;
  let text = '';
  try {
    while (!enough(read)) {
      const left = deadline - Date.now();
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        reader.read(),
        new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), Math.max(left, 0));
        }),
      ]);
      clearTimeout(timer);
      if (next === 'timeout') throw new Error(`event stream: not enough within ${timeoutMs} ms; read ${JSON.stringify(read).slice(0, 2000)}`);
      if (next.done) throw new Error(`event stream ended early; read ${JSON.stringify(read).slice(0, 2000)}`);
      text += decoder.decode(next.value, { stream: true });
      for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        let event: string | undefined;
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) read.comments.push(line.slice(1).trim());
          else if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
        }
        if (data.length) read.events.push({ ...(id === undefined ? {} : { id }), event, data: JSON.parse(data.join('\n')) });
      }
    }
    return read;
  } finally {
    reader.releaseLock();
  }
}
