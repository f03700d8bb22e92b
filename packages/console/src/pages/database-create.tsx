// Provisioning a database: every field of the contract with its default shown, the mysql
// rules stated before submit, and the API's 400 shown at the field it names. Versions,
// defaults, instance types and bounds come from what the cluster offers
// (database-engines.tsx); without it, the contract's defaults and a typed version. On 202
// the detail screen takes over and shows the progress until `running` (or `error`).
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { Field, FormError } from '../ui.tsx';
import { shownVersion, span, useEngineOffers, VersionField, type EngineOffer } from './database-engines.tsx';

type ProvisionBody = NonNullable<paths['/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases']['post']['requestBody']>['content']['application/json'];
export type Engine = NonNullable<ProvisionBody['engine']>;
export type InstanceType = NonNullable<ProvisionBody['instance_type']>;

// The ladder of packages/kit/src/instance-types.ts (the console does not bundle kit).
export const INSTANCE_TYPES: [InstanceType, string][] = [
  ['svc.nano', '0.25 CPU, 256 MiB'],
  ['svc.micro', '0.5 CPU, 512 MiB'],
  ['svc.small', '1 CPU, 1 GiB'],
  ['svc.medium', '2 CPU, 2 GiB'],
  ['svc.large', '2 CPU, 4 GiB'],
  ['svc.xlarge', '4 CPU, 8 GiB'],
];

// The contract's defaults (platform-api.md, services/databases README "Provisioning rules"),
// used until (or unless) the cluster's offer is read.
const DEFAULTS: Record<Engine, { instanceType: InstanceType; replicas: number }> = {
  postgresql: { instanceType: 'svc.nano', replicas: 0 },
  mysql: { instanceType: 'svc.small', replicas: 1 },
};
const STORAGE_DEFAULT = 10;
export const NAME_MAX = 19;
/** The fields on the form: an error naming one of them shows there. */
const FIELDS = ['name', 'engine', 'postgres_version', 'mysql_version', 'instance_type', 'storage_gb', 'replicas', 'external_access_enabled'];

/** What the API would refuse, said before submit (the same words as its 400s); `offer` adds the cluster's own bounds. */
export function localProblems(engine: Engine, instanceType: InstanceType, replicas: number, offer?: EngineOffer): Partial<Record<string, string>> {
  const problems: Partial<Record<string, string>> = {};
  if (engine === 'mysql' && instanceType === 'svc.nano')
    problems.instance_type = 'svc.nano is not available for mysql: choose svc.micro or larger (svc.small is the default)';
  else if (offer && !offer.instance_types.includes(instanceType))
    problems.instance_type = `${instanceType} is not offered for ${engine} on this cluster: ${offer.instance_types.join(', ')}`;
  if (engine === 'mysql' && replicas % 2 === 0) problems.replicas = 'must be an odd number (1, 3, 5, ...) for mysql';
  else if (offer && (replicas < offer.replicas.min || replicas > offer.replicas.max)) {
    const { min, max } = offer.replicas;
    problems.replicas = `must be ${min === max ? `exactly ${min}` : `between ${min} and ${max}`} for ${engine} on this cluster`;
  }
  return problems;
}

/** The defaults of an engine: the cluster's when its offer was read, else the contract's. */
function defaultsOf(engine: Engine, offer: EngineOffer | undefined): { instanceType: InstanceType; replicas: number } {
  return offer ? { instanceType: offer.default_instance_type, replicas: offer.replicas.default } : DEFAULTS[engine];
}

export function CreateDatabasePage() {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const [name, setName] = useState('');
  const [engine, setEngine] = useState<Engine>('postgresql');
  const [version, setVersion] = useState('');
  const [instanceType, setInstanceType] = useState<InstanceType>(DEFAULTS.postgresql.instanceType);
  const [storage, setStorage] = useState(String(STORAGE_DEFAULT));
  const [replicas, setReplicas] = useState(String(DEFAULTS.postgresql.replicas));
  const [external, setExternal] = useState(false);
  const engines = useEngineOffers(client);
  const offerOf = (e: Engine) => engines.data?.items.find((o) => o.engine === e);
  const offer = offerOf(engine);
  const defaults = defaultsOf(engine, offer);
  const create = useMutation((body: ProvisionBody) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases', { params: { path: { workspaceID: workspaceId, vpcID: vpcId } }, body })),
  );
  const problems = localProblems(engine, instanceType, Number(replicas), offer);
  const err = create.error;

  if (!canWrite) {
    return (
      <section aria-labelledby="create-db-title">
        <h1 id="create-db-title">Create a database</h1>
        <p class="note note-forbidden">Only an Admin or Owner of the workspace can create databases.</p>
      </section>
    );
  }

  const changeEngine = (next: Engine) => {
    // Defaults follow the engine unless the person chose otherwise.
    const nextDefaults = defaultsOf(next, offerOf(next));
    if (instanceType === defaults.instanceType) setInstanceType(nextDefaults.instanceType);
    if (Number(replicas) === defaults.replicas) setReplicas(String(nextDefaults.replicas));
    setVersion('');
    setEngine(next);
  };

  return (
    <section aria-labelledby="create-db-title">
      <p>
        <a href="/databases">← Databases</a>
      </p>
      <h1 id="create-db-title">Create a database</h1>
      <form
        noValidate
        onSubmit={async (e) => {
          e.preventDefault();
          if (Object.keys(problems).length > 0) return;
          const body: ProvisionBody = {
            name: name.trim(),
            engine,
            instance_type: instanceType,
            storage_gb: Number(storage),
            replicas: Number(replicas),
            external_access_enabled: external,
          };
          // With the offer read, the version on screen is sent (the default preselected); typed, empty means the default.
          const chosen = offer ? shownVersion(offer, version) : version.trim();
          if (chosen) body[engine === 'postgresql' ? 'postgres_version' : 'mysql_version'] = chosen;
          const made = await create.run(body);
          if (made) navigate(`/databases/${encodeURIComponent(made.value.id)}`);
        }}
      >
        <div class="form-grid">
          <Field name="name" id="db-name" label="Name" error={err} hint={`Up to ${NAME_MAX} lowercase letters, digits and hyphens; unique in the VPC.`}>
            {(a) => <input {...a} required maxLength={NAME_MAX} value={name} autoComplete="off" onInput={(e) => setName(e.currentTarget.value)} />}
          </Field>
          <Field name="engine" id="db-engine" label="Engine" error={err} hint="MySQL has its own rules, listed below when chosen.">
            {(a) => (
              <select {...a} value={engine} onChange={(e) => changeEngine(e.currentTarget.value as Engine)}>
                <option value="postgresql">PostgreSQL (default)</option>
                <option value="mysql">MySQL</option>
              </select>
            )}
          </Field>
          <VersionField
            engine={engine}
            offer={offer}
            adapter={engines.data?.adapter}
            loading={engines.loading}
            offerError={engines.error}
            value={version}
            onInput={setVersion}
            error={err}
          />
          <Field
            name="instance_type"
            label="Instance type"
            error={err}
            problem={problems.instance_type}
            hint={`Default ${defaults.instanceType} for ${engine === 'mysql' ? 'MySQL' : 'PostgreSQL'}${offer ? `; this cluster offers ${offer.instance_types.join(', ')}` : ''}.`}
          >
            {(a) => (
              <select {...a} value={instanceType} onChange={(e) => setInstanceType(e.currentTarget.value as InstanceType)}>
                {INSTANCE_TYPES.map(([type, size]) => (
                  <option key={type} value={type}>
                    {type} — {size}
                    {type === defaults.instanceType ? ' (default)' : ''}
                    {offered(engine, offer, type) ? '' : ` (not for ${engine === 'mysql' ? 'MySQL' : 'PostgreSQL'})`}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field name="storage_gb" label="Storage (GB)" error={err} hint={storageHint(offer)}>
            {(a) => (
              <input
                {...a}
                type="number"
                min={offer?.storage_gb.min ?? 1}
                max={offer?.storage_gb.max ?? 1024}
                step={1}
                value={storage}
                onInput={(e) => setStorage(e.currentTarget.value)}
              />
            )}
          </Field>
          <Field name="replicas" label="Replicas" error={err} problem={problems.replicas} hint={replicasHint(engine, offer)}>
            {(a) => (
              <input
                {...a}
                type="number"
                min={offer?.replicas.min ?? (engine === 'mysql' ? 1 : 0)}
                max={offer?.replicas.max}
                step={engine === 'mysql' ? 2 : 1}
                value={replicas}
                onInput={(e) => setReplicas(e.currentTarget.value)}
              />
            )}
          </Field>
        </div>
        <Field
          check
          name="external_access_enabled"
          label="External access (off by default)"
          error={err}
          hint="Reachable from outside the platform; an IP allowlist can then restrict who connects."
        >
          {(a) => <input {...a} type="checkbox" checked={external} onChange={(e) => setExternal(e.currentTarget.checked)} />}
        </Field>
        {engine === 'mysql' && <MysqlRules offer={offer} />}
        <FormError error={err} fields={FIELDS} />
        <div class="actions">
          <button type="submit" class="primary" disabled={create.pending}>
            {create.pending ? 'Creating…' : 'Create database'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** Whether the cluster offers `type` for the engine (without its offer: the contract's mysql rule). */
function offered(engine: Engine, offer: EngineOffer | undefined, type: InstanceType): boolean {
  return offer ? offer.instance_types.includes(type) : !(engine === 'mysql' && type === 'svc.nano');
}

function storageHint(offer: EngineOffer | undefined): string {
  if (!offer) return `1 to 1024, default ${STORAGE_DEFAULT}; it can grow later, never shrink.`;
  const b = offer.storage_gb;
  return `${span(b)}, default ${b.default}; it can grow later, never shrink.${b.enforced ? '' : ' This cluster records the size but does not limit the disk to it.'}`;
}

function replicasHint(engine: Engine, offer: EngineOffer | undefined): string {
  if (engine === 'mysql') {
    return `MySQL: instances in the set, the primary included; odd only (${offer ? `${span(offer.replicas)} on this cluster` : '1, 3, 5'}). Default ${offer?.replicas.default ?? 1}.`;
  }
  return offer
    ? `PostgreSQL: read replicas, ${span(offer.replicas)} on this cluster. Default ${offer.replicas.default}.`
    : 'PostgreSQL: read replicas, 0 to the cluster’s maximum (5 on docker, 8 on kubernetes). Default 0.';
}

/** The contract's mysql rules, on screen before the person submits. */
function MysqlRules({ offer }: { offer: EngineOffer | undefined }) {
  return (
    <section class="panel rules" aria-labelledby="mysql-rules-title">
      <h2 id="mysql-rules-title">MySQL rules</h2>
      <ul>
        <li>
          No <code>svc.nano</code>: MySQL runs on <code>svc.micro</code> or larger (<code>svc.small</code> is the default).
        </li>
        <li>
          <strong>Replicas</strong> count the instances in the set, the primary included, and must be odd: 1, 3 or 5. An even count is refused.
        </li>
        <li>Restores are of a named backup: there is no point-in-time recovery for MySQL.</li>
        {offer ? (
          offer.server !== 'MySQL' && (
            <li>
              On this cluster the server is {offer.server} {offer.versions.join(', ')}, wire- and SQL-compatible with MySQL.
            </li>
          )
        ) : (
          <li>On the docker cluster the server is MariaDB 10.11, wire- and SQL-compatible with MySQL.</li>
        )}
      </ul>
    </section>
  );
}
