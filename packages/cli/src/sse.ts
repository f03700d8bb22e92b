// Server-sent events as the API streams them (logs, build logs and events with follow=true).

/** Server-sent events off a response body: each event's name, id (when sent) and JSON data, comments skipped. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; id?: string; data: unknown }> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      let event = 'message';
      let id: string | undefined;
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      if (data) yield id === undefined ? { event, data: JSON.parse(data) } : { event, id, data: JSON.parse(data) };
    }
  }
}

/**
 * Runs a follow until Ctrl-C (SIGINT or SIGTERM aborts `signal`): the interruption is the end
 * the user asked for, so it resolves; any other failure is thrown.
 */
export async function followUntilInterrupted(follow: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    await follow(stop.signal);
  } catch (err) {
    if (stop.signal.aborted) return;
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
}
