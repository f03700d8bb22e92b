// Builds: from a public git repository or an uploaded archive (a .tar or .tar.gz of the
// source), the list, a build's log followed live over the API's event stream (`log` events,
// then one `status` event when it ends), and cancel for a queued or running build.
import { useEffect, useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { readEvents } from '../event-stream.ts';
import { invalidate, useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Field, FormError, ListTable, StatusBadge, when } from '../ui.tsx';
import { SERVICE, type SectionProps, type ServicePath } from './service-types.ts';

const BUILDS = `${SERVICE}/builds` as const;
type Build = paths[typeof BUILDS]['get']['responses'][200]['content']['application/json']['items'][number];
type GitBody = paths[`${typeof BUILDS}/git`]['post']['requestBody']['content']['application/json'];
const ENDED = new Set<Build['status']>(['succeeded', 'failed', 'cancelled']);

export function BuildsSection({ service, path }: SectionProps) {
  const { client, canWrite } = useSession();
  const builds = useQuery(`builds:${service.id}`, () => unwrap(client.GET(BUILDS, { params: { path, query: { limit: 10 } } })), 5000);
  const [shown, setShown] = useState<string | null>(null);
  const cancel = useMutation((buildID: string) => unwrap(client.POST(`${BUILDS}/{buildID}/cancel`, { params: { path: { ...path, buildID } } })));
  const rows = { ...builds, data: builds.data && { items: builds.data.items.map((b) => ({ ...b, name: b.id })) } };
  return (
    <div class="panel" role="region" aria-labelledby="builds-title">
      <h2 id="builds-title">Builds</h2>
      <ListTable
        query={rows}
        kind="build"
        what="builds"
        empty="No build yet."
        caption="Builds, newest first"
        columns={['Started', 'Source', 'Status']}
        actions={(b) => (
          <div class="row">
            <button type="button" aria-pressed={shown === b.id} onClick={() => setShown(shown === b.id ? null : b.id)}>
              {shown === b.id ? 'Hide log' : 'Show log'}
            </button>
            {canWrite && !ENDED.has(b.status) && (
              <button type="button" class="danger" disabled={cancel.pending} onClick={() => void cancel.run(b.id)}>
                Cancel build
              </button>
            )}
          </div>
        )}
        cells={(b) => (
          <>
            <td>{when(b.created_at)}</td>
            <td class="wrap">
              {b.source === 'git' ? `${b.repo_url}${b.ref ? ` @ ${b.ref}` : ''}` : 'upload'}
              {b.commit_sha ? <span class="muted"> ({b.commit_sha.slice(0, 12)})</span> : null}
            </td>
            <td>
              <StatusBadge status={b.status} />
              {b.error ? <span class="muted wrap"> {b.error}</span> : null}
            </td>
          </>
        )}
      />
      <ErrorNote error={cancel.error} />
      {shown && <BuildLog path={{ ...path, buildID: shown }} />}
      {canWrite && <NewBuild path={path} onQueued={setShown} />}
    </div>
  );
}

/** The log of one build: the whole of it, then each new part until the build ends. */
function BuildLog({ path }: { path: ServicePath & { buildID: string } }) {
  const { client } = useSession();
  const [log, setLog] = useState('');
  const [state, setState] = useState('connecting');
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    const stop = new AbortController();
    setLog('');
    setState('connecting');
    void (async () => {
      try {
        const body = await unwrap(
          client.GET(`${BUILDS}/{buildID}/logs`, {
            params: { path, query: { follow: 'true' } },
            headers: { accept: 'text/event-stream' },
            parseAs: 'stream',
            signal: stop.signal,
          }),
        );
        setState('following');
        for await (const e of readEvents(body as ReadableStream<Uint8Array>)) {
          if (e.event === 'log') setLog((l) => l + (JSON.parse(e.data) as { text: string }).text);
          if (e.event === 'status') {
            setState(`ended: ${(JSON.parse(e.data) as Build).status}`);
            invalidate(); // the list shows the build's end (and a deployment it made)
            return;
          }
        }
        setState('the stream ended; show the log again to read the rest');
      } catch (err) {
        if (!stop.signal.aborted) setError(err);
      }
    })();
    return () => stop.abort();
  }, [path.buildID]);
  return (
    <div>
      <h3>
        Build log <span class="muted mono">{path.buildID.slice(0, 8)}</span>
      </h3>
      <p class="muted" role="status">
        {state}
      </p>
      <ErrorNote error={error} />
      <pre class="logs" tabIndex={0} aria-label="Build log">
        {log || ' '}
      </pre>
    </div>
  );
}

function NewBuild({ path, onQueued }: { path: ServicePath; onQueued: (id: string) => void }) {
  const { client } = useSession();
  const [source, setSource] = useState<'git' | 'upload'>('git');
  const [f, setF] = useState({ repo_url: '', ref: '', dockerfile_path: '', context_dir: '', deploy: true });
  const [file, setFile] = useState<File | null>(null);
  const git = useMutation((body: GitBody) => unwrap(client.POST(`${BUILDS}/git`, { params: { path }, body })));
  const upload = useMutation((archive: File) => {
    const gz = /\.(tgz|gz)$/i.test(archive.name);
    return unwrap(
      client.POST(`${BUILDS}/source-upload`, {
        params: {
          path,
          query: {
            dockerfile_path: f.dockerfile_path.trim() || undefined,
            context_dir: f.context_dir.trim() || undefined,
            deploy: f.deploy ? 'true' : 'false',
          },
        },
        // The archive goes as it is: the SDK would otherwise serialise the body as JSON.
        body: archive as never,
        bodySerializer: (b: unknown) => b as never,
        headers: { 'content-type': gz ? 'application/gzip' : 'application/x-tar' },
      }),
    );
  });
  const m = source === 'git' ? git : upload;
  const set = (k: 'repo_url' | 'ref' | 'dockerfile_path' | 'context_dir') => (e: { currentTarget: { value: string } }) =>
    setF({ ...f, [k]: e.currentTarget.value });
  return (
    <form
      class="new-build"
      onSubmit={async (e) => {
        e.preventDefault();
        const queued =
          source === 'git'
            ? await git.run({
                repo_url: f.repo_url.trim(),
                ref: f.ref.trim() || undefined,
                dockerfile_path: f.dockerfile_path.trim() || undefined,
                context_dir: f.context_dir.trim() || undefined,
                deploy: f.deploy,
              })
            : file && (await upload.run(file));
        if (queued) onQueued(queued.value.id);
      }}
    >
      <h3>New build</h3>
      <fieldset class="row">
        <legend>Source</legend>
        <label class="check">
          <input type="radio" name="build-source" checked={source === 'git'} onChange={() => setSource('git')} /> Git repository
        </label>
        <label class="check">
          <input type="radio" name="build-source" checked={source === 'upload'} onChange={() => setSource('upload')} /> Upload an archive
        </label>
      </fieldset>
      <div class="grid">
        {source === 'git' ? (
          <>
            <Field name="repo_url" label="Repository URL" error={m.error} hint="A public repository, over https.">
              {(a) => <input {...a} value={f.repo_url} required spellcheck={false} onInput={set('repo_url')} />}
            </Field>
            <Field name="ref" label="Branch, tag or commit" error={m.error} hint="Default: the default branch.">
              {(a) => <input {...a} value={f.ref} spellcheck={false} onInput={set('ref')} />}
            </Field>
          </>
        ) : (
          <Field name="archive" label="Source archive" error={m.error} hint="A .tar or .tar.gz of the source.">
            {(a) => (
              <input
                {...a}
                type="file"
                accept=".tar,.tgz,.gz,application/gzip,application/x-tar"
                required
                onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
              />
            )}
          </Field>
        )}
        <Field name="dockerfile_path" label="Dockerfile" error={m.error} hint="Default: Dockerfile.">
          {(a) => <input {...a} value={f.dockerfile_path} placeholder="Dockerfile" spellcheck={false} onInput={set('dockerfile_path')} />}
        </Field>
        <Field name="context_dir" label="Build context" error={m.error} hint="Default: . (the root).">
          {(a) => <input {...a} value={f.context_dir} placeholder="." spellcheck={false} onInput={set('context_dir')} />}
        </Field>
      </div>
      <label class="check">
        <input type="checkbox" checked={f.deploy} onChange={(e) => setF({ ...f, deploy: e.currentTarget.checked })} /> Deploy the image once built
      </label>
      <FormError error={m.error} fields={['repo_url', 'ref', 'dockerfile_path', 'context_dir']} />
      <button type="submit" class="primary" disabled={m.pending}>
        {m.pending ? 'Starting…' : 'Start build'}
      </button>
    </form>
  );
}
