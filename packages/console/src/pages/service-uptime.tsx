// Uptime monitoring of a web service's public URL: enable (or change) and disable it, its
// state and last check, a bar for each of the last 24 hours (the API's `hourly_24h`: an
// hour without checks is shown as such, never as up), uptime over 24 hours and 7 days (as
// meters) and the incidents.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Field, fieldOf, Loading, StatusBadge, when } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

type EnableBody = NonNullable<paths[`${typeof SERVICE}/uptime`]['post']['requestBody']>['content']['application/json'];

const pct = (v: number | null) => (v === null ? '—' : `${v}%`);

export function UptimeSection({ service, path }: SectionProps) {
  const { client, canWrite } = useSession();
  const uptime = useQuery(`uptime:${service.id}`, () => unwrap(client.GET(`${SERVICE}/uptime`, { params: { path } })), 10_000);
  const [form, setForm] = useState({ path: '', interval_seconds: '', timeout_seconds: '' });
  const enable = useMutation((body: EnableBody) => unwrap(client.POST(`${SERVICE}/uptime`, { params: { path }, body })));
  const disable = useMutation(() => unwrap(client.DELETE(`${SERVICE}/uptime`, { params: { path } })));
  if (service.service_type !== 'web') return null;
  const u = uptime.data;
  const set = (k: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [k]: e.currentTarget.value });
  return (
    <div class="panel" role="region" aria-labelledby="uptime-title">
      <h2 id="uptime-title">Uptime</h2>
      <ErrorNote error={uptime.error} />
      {!u ? (
        uptime.loading && <Loading what="uptime" />
      ) : !u.enabled ? (
        <p class="muted">Uptime monitoring is off.</p>
      ) : (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>
              <StatusBadge status={u.status} />
              {u.last_error ? <span class="muted wrap"> {u.last_error}</span> : null}
            </dd>
            <dt>Checks</dt>
            <dd class="wrap">
              {u.path} every {u.interval_seconds} s (timeout {u.timeout_seconds} s, up on {u.expected_status?.min}-{u.expected_status?.max})
            </dd>
            <dt>Last check</dt>
            <dd>
              {when(u.last_checked_at)}
              {u.last_status_code !== null ? `: ${u.last_status_code}` : ''}
              {u.last_latency_ms !== null ? ` in ${u.last_latency_ms} ms` : ''}
            </dd>
            <dt>By hour</dt>
            <dd>
              <HourBars hours={u.hourly_24h} />
            </dd>
            <dt>Last 24 hours</dt>
            <dd>
              <meter min={0} max={100} low={99} optimum={100} value={u.uptime_24h ?? 0} aria-label="Uptime over 24 hours" /> {pct(u.uptime_24h)}
            </dd>
            <dt>Last 7 days</dt>
            <dd>
              <meter min={0} max={100} low={99} optimum={100} value={u.uptime_7d ?? 0} aria-label="Uptime over 7 days" /> {pct(u.uptime_7d)}
            </dd>
          </dl>
          <h3>Incidents</h3>
          {u.incidents.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul class="incidents">
              {u.incidents.map((i) => (
                <li key={i.started_at}>
                  {when(i.started_at)} – {i.ended_at ? when(i.ended_at) : 'ongoing'}: <span class="wrap">{i.reason}</span>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {canWrite && u && (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            const n = (v: string) => (v.trim() === '' ? undefined : Number(v.trim()));
            await enable.run({ path: form.path.trim() || undefined, interval_seconds: n(form.interval_seconds), timeout_seconds: n(form.timeout_seconds) });
          }}
        >
          <Field name="path" label="Path checked" error={enable.error} hint="Default: /.">
            {(a) => <input {...a} value={form.path} placeholder={u.path ?? '/'} spellcheck={false} onInput={set('path')} />}
          </Field>
          <Field name="interval_seconds" label="Every (seconds)" error={enable.error} hint="Default: 60.">
            {(a) => (
              <input
                {...a}
                inputMode="numeric"
                value={form.interval_seconds}
                placeholder={String(u.interval_seconds ?? 60)}
                onInput={set('interval_seconds')}
              />
            )}
          </Field>
          <Field name="timeout_seconds" label="Timeout (seconds)" error={enable.error} hint="Default: 10.">
            {(a) => (
              <input {...a} inputMode="decimal" value={form.timeout_seconds} placeholder={String(u.timeout_seconds ?? 10)} onInput={set('timeout_seconds')} />
            )}
          </Field>
          <button type="submit" class="primary" disabled={enable.pending}>
            {u.enabled ? 'Update monitoring' : 'Enable monitoring'}
          </button>
          {u.enabled && (
            <button type="button" class="danger" disabled={disable.pending} onClick={() => void disable.run()}>
              Disable monitoring
            </button>
          )}
        </form>
      )}
      <ErrorNote
        error={['path', 'interval_seconds', 'timeout_seconds'].includes(fieldOf(enable.error) ?? '') ? disable.error : (enable.error ?? disable.error)}
      />
    </div>
  );
}

type Hour = { hour: string; checks: number; uptime: number | null };

/** One bar per hour, oldest first: green all up, amber some checks failed, red none passed, grey no checks. Each says its figures in words. */
function HourBars({ hours }: { hours: Hour[] }) {
  const clock = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const kind = (h: Hour) => (h.uptime === null ? 'none' : h.uptime === 100 ? 'up' : h.uptime === 0 ? 'down' : 'partial');
  return (
    <ol class="hour-bars" aria-label="Uptime by hour, the last 24 hours">
      {hours.map((h) => {
        const words = `${clock(h.hour)}: ${h.uptime === null ? 'no checks' : `${h.uptime}% of ${h.checks} checks`}`;
        return (
          <li key={h.hour} class={`hour-bar hour-${kind(h)}`} title={words}>
            <span class="sr-only">{words}</span>
          </li>
        );
      })}
    </ol>
  );
}
