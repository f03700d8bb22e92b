// pier db engines: what `pier db create` may ask for on this installation — versions (the
// default marked), instance types, replica and storage bounds — read from the API, so it
// is what provisioning will accept.
import type { Command } from 'commander';
import { unwrap } from '@pier/sdk';
import { examples, run } from '../command.ts';

const ENGINES = '/api/v1/database-engines' as const;

type Bounds = { min: number; max: number };
const range = (b: Bounds) => (b.min === b.max ? String(b.min) : `${b.min}-${b.max}`);

export function register(db: Command): void {
  examples(
    db
      .command('engines')
      .description('Engines, versions and instance types this installation offers (what db create accepts)')
      .action(
        run(async (ctx) => {
          const client = await ctx.client();
          const offer = await unwrap(client.GET(ENGINES));
          ctx.out.result(offer, () => {
            ctx.out.table(offer.items, [
              { header: 'ENGINE', value: (e) => e.engine },
              { header: 'SERVER', value: (e) => e.server },
              { header: 'VERSIONS', value: (e) => e.versions.map((v) => (v === e.default_version ? `${v} (default)` : v)).join(', ') },
              { header: 'INSTANCE TYPES', value: (e) => e.instance_types.map((t) => (t === e.default_instance_type ? `${t} (default)` : t)).join(', ') },
              { header: 'REPLICAS', value: (e) => `${range(e.replicas)}${e.replicas.odd_only ? ', odd' : ''}` },
              { header: 'STORAGE', value: (e) => `${range(e.storage_gb)} GB${e.storage_gb.enforced ? '' : ' (not enforced)'}` },
            ]);
            ctx.out.line();
            ctx.out.line(`On the ${offer.adapter} cluster. Choose with: pier db create <name> --engine <engine> --version <version> --instance-type <type>`);
          });
        }),
      ),
    'pier db engines',
    'pier --json db engines',
  );
}
