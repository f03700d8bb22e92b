import { useEffect, useRef, useState } from 'preact/hooks';
import { LogResume, unwrap, type paths } from '../api.ts';
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
 * recent lines, then each new one as it is printed). Pausing keeps what is on screen. When
 * the stream ends — at once when the API says `reconnect` (an instance draining), else
 * after a moment — the follow starts again from the newest line shown (`since`), and the
 * lines of that instant already on screen are not added twice (`LogResume`, as the CLI).
 */
export function LogsSection({ path }: SectionProps) {
  const { client } = useSession();
  const [follow, setFollow] = useState(true);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'paused' | 'reconnecting'>('connecting');
  const [error, setError] = useState<unknown>(undefined);
  // Kept across pauses and reconnections: what is on screen for this service.
  const shown = useRef({ serviceID: path.serviceID, resume: new LogResume() });
  if (shown.current.serviceID !== path.serviceID) shown.current = { serviceID: path.serviceID, resume: new LogResume() };

  useEffect(() => {
    if (!follow) {
      setState('paused');
      return;
    }
    const { resume } = shown.current;
    const stop = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const open = async () => {
      let drained = false;
      try {
        const body = await unwrap(
          client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/logs', {
            params: { path, query: { follow: 'true', limit: 200, since: resume.since } },
            parseAs: 'stream',
            signal: stop.signal,
          }),
        );
        setError(undefined);
        setState('live');
        for await (const e of readEvents(body as ReadableStream<Uint8Array>)) {
          if (e.event === 'reconnect') drained = true;
          if (e.event !== 'line') continue;
          const line = JSON.parse(e.data) as LogLine;
          if (!resume.fresh(line)) continue;
          setLines((old) => (old.length >= KEPT_LINES ? [...old.slice(old.length - KEPT_LINES + 1), line] : [...old, line]));
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        setError(err);
      }
      if (stop.signal.aborted) return;
      setState('reconnecting');
      // After a drain another instance takes the stream now (the SDK's retries wait for
      // one); a stream that ended otherwise is opened again after a moment.
      retry = setTimeout(() => void open(), drained ? 0 : 2000);
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
