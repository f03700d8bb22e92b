import { useEffect, useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { readEvents } from '../event-stream.ts';
import { useSession } from '../session.ts';
import { ErrorNote } from '../ui.tsx';
import type { SectionProps } from './service-types.ts';

export type LogLine =
  paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/logs']['get']['responses'][200]['content']['application/json']['items'][number];

/** How many lines the page keeps while following (older ones scroll away). */
const KEPT_LINES = 1000;

/**
 * The service's logs, followed live over the API's event stream (`?follow=true`: the
 * recent lines, then each new one as it is printed). Pausing keeps what is on screen; a
 * stream that ends (an instance restarting) is opened again after a moment.
 */
export function LogsSection({ path }: SectionProps) {
  const { client } = useSession();
  const [follow, setFollow] = useState(true);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'paused' | 'reconnecting'>('connecting');
  const [error, setError] = useState<unknown>(undefined);

  useEffect(() => {
    if (!follow) {
      setState('paused');
      return;
    }
    const stop = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const open = async () => {
      try {
        const body = await unwrap(
          client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/logs', {
            params: { path, query: { follow: 'true', limit: 200 } },
            parseAs: 'stream',
            signal: stop.signal,
          }),
        );
        setError(undefined);
        setLines([]); // the stream starts with the recent lines again
        setState('live');
        for await (const e of readEvents(body as ReadableStream<Uint8Array>)) {
          if (e.event !== 'line') continue;
          const line = JSON.parse(e.data) as LogLine;
          setLines((old) => (old.length >= KEPT_LINES ? [...old.slice(old.length - KEPT_LINES + 1), line] : [...old, line]));
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        setError(err);
      }
      if (stop.signal.aborted) return;
      setState('reconnecting');
      retry = setTimeout(() => void open(), 2000);
    };
    setState('connecting');
    void open();
    return () => {
      stop.abort();
      clearTimeout(retry);
    };
  }, [follow, path.serviceID]);

  return (
    <div class="panel">
      <div class="panel-head">
        <h2>Logs</h2>
        <span class="muted" role="status">
          {state === 'live' ? 'following' : state}
        </span>
        <button type="button" aria-pressed={!follow} onClick={() => setFollow(!follow)}>
          {follow ? 'Pause' : 'Follow'}
        </button>
      </div>
      <ErrorNote error={error} />
      {lines.length === 0 ? (
        <p class="muted">{state === 'connecting' ? 'Loading logs…' : 'No log lines yet.'}</p>
      ) : (
        <pre class="logs" tabIndex={0} aria-label="Log lines">
          {lines.map((l) => `${l.timestamp} ${l.replica} ${l.message}`).join('\n')}
        </pre>
      )}
    </div>
  );
}
