// pier services domains: custom domains of a web service — list them, add one (and see the
// DNS records to create), verify it (DNS checked, the hostname routed, a certificate
// issued), remove it. A domain is named by its hostname or its id.
import type { Command } from 'commander';
import { paginate, unwrap, type paths, type PierClient } from '@pier/sdk';
import { examples, group, run } from '../command.ts';
import type { Context, Scope } from '../context.ts';
import { CliError } from '../errors.ts';
import { collectAll, service, SERVICE } from '../resources.ts';

const DOMAINS = `${SERVICE}/domains` as const;
const DOMAIN = `${SERVICE}/domains/{domainID}` as const;

type Domain = paths[typeof DOMAINS]['post']['responses'][201]['content']['application/json'];
type ServicePath = Scope & { serviceID: string };

function all(client: PierClient, path: ServicePath): Promise<Domain[]> {
  return collectAll(paginate((cursor) => unwrap(client.GET(DOMAINS, { params: { path, query: { cursor } } }))));
}

/** A domain of the service by hostname (any case, trailing dot allowed) or id. */
async function find(client: PierClient, path: ServicePath, ref: string): Promise<Domain> {
  const wanted = ref.toLowerCase().replace(/\.$/, '');
  const found = (await all(client, path)).find((d) => d.id === wanted || d.hostname === wanted);
  if (!found) throw new CliError(`no domain ${ref} on this service (see pier services domains list)`, 'domain_not_found');
  return found;
}

/** The records the user must create at their DNS provider. */
function showRecords(ctx: Context, d: Domain): void {
  ctx.out.table(
    [d.verification, ...d.routing],
    [
      { header: 'TYPE', value: (r) => r.type },
      { header: 'NAME', value: (r) => r.name },
      { header: 'VALUE', value: (r) => r.value },
    ],
  );
}

function showDomain(ctx: Context, d: Domain): void {
  ctx.out.fields([
    ['hostname', d.hostname],
    ['status', d.status],
    ['certificate', d.tls.status === 'issued' ? `issued by ${d.tls.issuer}, expires ${d.tls.expires_at}` : d.tls.status],
    // Until verified, the domain is only a claim: others may claim the hostname, and it lapses.
    ...(d.verified_at ? [] : ([['claim expires', d.claim_expires_at]] as [string, unknown][])),
    ['last checked', d.last_checked_at],
    ['error', d.error],
  ]);
  if (d.status !== 'active') {
    ctx.out.line();
    ctx.out.line('DNS records it needs:');
    showRecords(ctx, d);
  }
}

export function register(services: Command): void {
  const domains = group(services, 'domains', 'Custom domains of a web service: DNS verification, routing through the edge, TLS certificates');

  examples(
    domains
      .command('list <service>')
      .description('Custom domains of the service, with their state and certificate')
      .action(
        run(async (ctx, ref: string) => {
          const { client, path } = await service(ctx, ref);
          const items = await all(client, path);
          ctx.out.result(items, () =>
            ctx.out.table(
              items,
              [
                { header: 'HOSTNAME', value: (d) => d.hostname },
                { header: 'STATUS', value: (d) => d.status },
                { header: 'TLS', value: (d) => d.tls.status },
                { header: 'EXPIRES', value: (d) => d.tls.expires_at },
                { header: 'ERROR', value: (d) => d.error },
              ],
              'No custom domains.',
            ),
          );
        }),
      ),
    'pier services domains list web',
  );

  examples(
    domains
      .command('add <service> <hostname>')
      .description('Attach a hostname; prints the DNS records to create before verify')
      .action(
        run(async (ctx, ref: string, hostname: string) => {
          const { client, path } = await service(ctx, ref);
          const d = await unwrap(client.POST(DOMAINS, { params: { path }, body: { hostname } }));
          ctx.out.result(d, () => {
            ctx.out.line(`Attached ${d.hostname} to ${ref}. Create these DNS records, then run: pier services domains verify ${ref} ${d.hostname}`);
            showRecords(ctx, d);
            ctx.out.line(
              `Verify before ${d.claim_expires_at}, or the claim lapses; until then other services may claim ${d.hostname} too, and the first verified wins.`,
            );
          });
        }),
      ),
    'pier services domains add web www.example.com',
  );

  examples(
    domains
      .command('verify <service> <domain>')
      .description('Check DNS; when it is right, route the hostname and issue its certificate (exits 1 when it failed)')
      .action(
        run(async (ctx, ref: string, domainRef: string) => {
          const { client, path } = await service(ctx, ref);
          const { id } = await find(client, path, domainRef);
          const d = await unwrap(client.POST(`${DOMAIN}/verify`, { params: { path: { ...path, domainID: id } } }));
          ctx.out.result(d, () => showDomain(ctx, d));
          if (d.status === 'failed') process.exitCode = 1;
        }),
      ),
    'pier services domains verify web www.example.com',
  );

  examples(
    domains
      .command('remove <service> <domain>')
      .description('Detach a domain: it stops routing and its certificate leaves the edge')
      .action(
        run(async (ctx, ref: string, domainRef: string) => {
          const { client, path } = await service(ctx, ref);
          const d = await find(client, path, domainRef);
          await unwrap(client.DELETE(DOMAIN, { params: { path: { ...path, domainID: d.id } } }));
          ctx.out.result({ id: d.id, hostname: d.hostname, removed: true }, () => ctx.out.line(`Removed ${d.hostname} from ${ref}.`));
        }),
      ),
    'pier services domains remove web www.example.com',
  );
}
