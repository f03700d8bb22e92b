import { useEffect, useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { readEvents } from '../event-stream.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading, StatusBadge, when } from '../ui.tsx';
import { SERVICES_POLL_MS } from './services.tsx';
import { ServiceMetrics } from './service-metrics.tsx';

export function ServicePage({ id }: { id: string }) {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId, serviceID: id };
  const service = useQuery(
    `service:${workspaceId}:${vpcId}:${id}`,
    () => unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}', { params: { path } })),
    SERVICES_POLL_MS,
  );
  const s = service.data;
  return (
    <section aria-labelledby="service-title">
      <p>
        <a href="/services">← Services</a>
      </p>
      <h1 id="service-title">{s?.name ?? 'Service'}</h1>
      <ErrorNote error={service.error} />
      {!s ? (
        service.loading && <Loading what="the service" />
      ) : (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={s.status} />
              {s.status_message ? <span class="muted"> {s.status_message}</span> : null}
            </dd>
            <dt>Replicas</dt>
            <dd>
              {s.replicas.ready} / {s.replicas.desired} ready
            </dd>
            <dt>Image</dt>
            <dd class="wrap">{s.image ?? '—'}</dd>
            <dt>Type</dt>
            <dd>
              {s.service_type}, {s.instance_type} ({s.resources.cpu} CPU, {s.resources.memory_mib} MiB), {s.deployment_mode}
            </dd>
            <dt>URL</dt>
            <dd class="wrap">{s.url ? <a href={s.url}>{s.url}</a> : '—'}</dd>
            <dt>Updated</dt>
            <dd>{when(s.updated_at)}</dd>
          </dl>
          {canWrite && <Actions path={path} image={s.image} />}
          <Logs path={path} />
          <ServiceMetrics serviceId={id} />
        </>
      )}
    </section>
  );
}

type ServicePath = { workspaceID: string; vpcID: string; serviceID: string };

function Actions({ path, image }: { path: ServicePath; image: string | null }) {
  const { client } = useSession();
  const [tag, setTag] = useState('');
  const [done, setDone] = useState('');
  const deploy = useMutation((image_tag: string) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/deploy', { params: { path }, body: { image_tag } })),
  );
  const restart = useMutation(() => unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/restart', { params: { path } })));
  return (
    <div class="panel">
      <h2>Actions</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          setDone('');
          if (await deploy.run(tag.trim())) setDone(`Deploying ${tag.trim()}: the status above follows it.`);
        }}
      >
        <label>
          Image tag to deploy
          <input value={tag} placeholder={image?.split(':').pop() ?? 'latest'} required onInput={(e) => setTag(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={deploy.pending || !tag.trim()}>
          {deploy.pending ? 'Deploying…' : 'Deploy'}
        </button>
        <button
          type="button"
          disabled={restart.pending}
          onClick={async () => {
            setDone('');
            if (await restart.run()) setDone('Restarting: the status above follows it.');
          }}
        >
          {restart.pending ? 'Restarting…' : 'Restart'}
        </button>
      </form>
      <ErrorNote error={deploy.error ?? restart.error} />
      {done && (
        <p class="note" role="status">
          {done}
        </p>
      )}
    </div>
  );
}

type LogLine =
  paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services/{serviceID}/logs']['get']['responses'][200]['content']['application/json']['items'][number];

/** How many lines the page keeps while following (older ones scroll away). */
const KEPT_LINES = 1000;

/**
 * The service's logs, followed live over the API's event stream (`?follow=true`: the
 * recent lines, then each new one as it is printed). Pausing keeps what is on screen; a
 * stream that ends (an instance restarting) is opened again after a moment.
 */
function Logs({ path }: { path: ServicePath }) {
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
