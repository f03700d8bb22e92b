// Stored logs of a time range, searched by text: the API's `logs/history` with its own
// query parameters (`start`, `end` as a time or a duration back from now, `q`), a page at a
// time (`next_cursor`).
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useSession } from '../session.ts';
import { Field, FormError } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';
import type { LogLine } from './service-logs.tsx';

const PAGE = 200;

interface Search {
  start: string;
  end: string;
  q: string;
}

export function LogHistorySection({ path }: SectionProps) {
  const { client } = useSession();
  const [form, setForm] = useState<Search>({ start: '1h', end: '', q: '' });
  const [lines, setLines] = useState<LogLine[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [searched, setSearched] = useState<Search | null>(null);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(undefined);

  const read = async (s: Search, after: string | null) => {
    setPending(true);
    setError(undefined);
    try {
      const page = await unwrap(
        client.GET(`${SERVICE}/logs/history`, {
          params: {
            path,
            query: { start: s.start.trim() || undefined, end: s.end.trim() || undefined, q: s.q || undefined, limit: PAGE, cursor: after ?? undefined },
          },
        }),
      );
      setLines((old) => (after && old ? [...old, ...page.items] : page.items));
      setCursor(page.next_cursor);
      setSearched(s);
    } catch (err) {
      setError(err);
    } finally {
      setPending(false);
    }
  };
  const set = (k: keyof Search) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value });
  const hint = 'A time (2025-05-01T12:00:00Z) or a duration back from now (15m, 2h, 7d).';

  return (
    <div class="panel" role="region" aria-labelledby="log-history-title">
      <h2 id="log-history-title">Log history</h2>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void read(form, null);
        }}
      >
        <Field name="start" label="From" error={error} hint={`${hint} Default: an hour before the end.`}>
          {(a) => <input {...a} value={form.start} spellcheck={false} onInput={set('start')} />}
        </Field>
        <Field name="end" label="Until" error={error} hint="Empty: now.">
          {(a) => <input {...a} value={form.end} spellcheck={false} onInput={set('end')} />}
        </Field>
        <Field name="q" label="Containing" error={error} hint="Case-sensitive text.">
          {(a) => <input {...a} type="search" value={form.q} spellcheck={false} onInput={set('q')} />}
        </Field>
        <button type="submit" class="primary" disabled={pending}>
          {pending ? 'Searching…' : 'Search logs'}
        </button>
      </form>
      <FormError error={error} fields={['start', 'end', 'q']} />
      {lines !== null && (
        <>
          <p class="muted" role="status">
            {lines.length === 0 ? 'No line matches.' : `${lines.length} line${lines.length === 1 ? '' : 's'}${cursor ? ' (more below)' : ''}.`}
          </p>
          {lines.length > 0 && (
            <pre class="logs" tabIndex={0} aria-label="Log history lines">
              {lines.map((l) => `${l.timestamp} ${l.replica} ${l.message}`).join('\n')}
            </pre>
          )}
          {cursor && searched && (
            <button type="button" disabled={pending} onClick={() => void read(searched, cursor)}>
              Load more
            </button>
          )}
        </>
      )}
    </div>
  );
}
