// Custom domains of a web service: attach a hostname, the DNS records to create (each value
// with a copy button), verify (the API checks DNS and obtains the certificate), the
// certificate's state, detach after a confirmation.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { CopyButton, ErrorNote, Field, FormError, Loading, StatusBadge, useConfirmedRemoval, when } from '../ui.tsx';
import { SERVICE, type SectionProps } from './service-types.ts';

type Domain = paths[`${typeof SERVICE}/domains`]['get']['responses'][200]['content']['application/json']['items'][number];
type DnsRecord = Domain['verification'];

export function DomainsSection({ service, path }: SectionProps) {
  const { client, canWrite } = useSession();
  const domains = useQuery(`domains:${service.id}`, () => unwrap(client.GET(`${SERVICE}/domains`, { params: { path, query: { limit: 100 } } })), 10_000);
  const [hostname, setHostname] = useState('');
  const attach = useMutation((h: string) => unwrap(client.POST(`${SERVICE}/domains`, { params: { path }, body: { hostname: h } })));
  const remove = useConfirmedRemoval({
    verb: 'Detach',
    noun: 'domain',
    warning: 'The hostname stops routing to this service and its certificate is removed.',
    remove: (domainID) => unwrap(client.DELETE(`${SERVICE}/domains/{domainID}`, { params: { path: { ...path, domainID } } })),
  });
  const items = domains.data?.items ?? [];
  return (
    <div class="panel" role="region" aria-labelledby="domains-title">
      <h2 id="domains-title">Custom domains</h2>
      <ErrorNote error={domains.error} />
      {domains.loading && !domains.data ? (
        <Loading what="domains" />
      ) : items.length === 0 ? (
        <p class="muted">No custom domain.</p>
      ) : (
        items.map((d) => <DomainCard key={d.id} domain={d} path={path} removeButton={canWrite ? remove.button({ id: d.id, name: d.hostname }) : null} />)
      )}
      {canWrite &&
        (service.service_type !== 'web' ? (
          <p class="muted">Custom domains route to web services; this is a {service.service_type} service.</p>
        ) : (
          <form
            class="inline"
            onSubmit={async (e) => {
              e.preventDefault();
              if (await attach.run(hostname.trim())) setHostname('');
            }}
          >
            <Field name="hostname" label="Hostname to attach" error={attach.error}>
              {(a) => (
                <input {...a} value={hostname} placeholder="www.example.com" required spellcheck={false} onInput={(e) => setHostname(e.currentTarget.value)} />
              )}
            </Field>
            <button type="submit" class="primary" disabled={attach.pending || !hostname.trim()}>
              {attach.pending ? 'Attaching…' : 'Attach domain'}
            </button>
          </form>
        ))}
      <FormError error={attach.error} fields={['hostname']} />
      {remove.dialog}
    </div>
  );
}

function DomainCard({ domain: d, path, removeButton }: { domain: Domain; path: SectionProps['path']; removeButton: ComponentChildren }) {
  const { client, canWrite } = useSession();
  const verify = useMutation(() => unwrap(client.POST(`${SERVICE}/domains/{domainID}/verify`, { params: { path: { ...path, domainID: d.id } } })));
  const records: DnsRecord[] = [d.verification, ...d.routing];
  return (
    <article class="domain" data-domain={d.hostname} aria-label={d.hostname}>
      <div class="panel-head">
        <h3 class="wrap">{d.hostname}</h3>
        <StatusBadge status={d.status} />
      </div>
      <p>
        Certificate: <StatusBadge status={d.tls.status} />
        {d.tls.issuer ? ` from ${d.tls.issuer}` : ''}
        {d.tls.expires_at ? `, expires ${when(d.tls.expires_at)}` : ''}
        {d.tls.error ? <span class="wrap"> — {d.tls.error}</span> : null}
      </p>
      {d.error && (
        <p class="note note-error wrap" role="alert">
          {d.error}
        </p>
      )}
      {d.status !== 'active' && (
        <>
          <p>Create these DNS records{d.claim_expires_at ? `, then verify before ${when(d.claim_expires_at)} or the claim lapses` : ''}:</p>
          <div class="table-wrap" tabIndex={0} role="region" aria-label={`DNS records for ${d.hostname}`}>
            <table>
              <caption class="sr-only">DNS records for {d.hostname}</caption>
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">Name</th>
                  <th scope="col">Value</th>
                </tr>
              </thead>
              <tbody>
                {records.map((r, i) => (
                  <tr key={i} data-record={r.type}>
                    <td>{r.type}</td>
                    <td class="wrap">
                      <code>{r.name}</code> <CopyButton text={r.name} label={`Copy ${r.type} name`} />
                    </td>
                    <td class="wrap">
                      <code>{r.value}</code> <CopyButton text={r.value} label={`Copy ${r.type} value`} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <p class="muted">Last checked: {when(d.last_checked_at)}</p>
      {canWrite && (
        <div class="row">
          <button type="button" disabled={verify.pending} onClick={() => void verify.run()}>
            {verify.pending ? 'Checking DNS…' : `Verify ${d.hostname}`}
          </button>
          {removeButton}
        </div>
      )}
      <ErrorNote error={verify.error} />
    </article>
  );
}
