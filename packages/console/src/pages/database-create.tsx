// Provisioning a database: every field of the contract with its default shown, the mysql
// rules stated before submit, and the API's 400 shown at the field it names. On 202 the
// detail screen takes over and shows the progress until `running` (or `error`).
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { Field, FormError } from '../ui.tsx';

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

// The contract's defaults (platform-api.md, services/databases README "Provisioning rules").
const DEFAULTS: Record<Engine, { instanceType: InstanceType; replicas: number }> = {
  postgresql: { instanceType: 'svc.nano', replicas: 0 },
  mysql: { instanceType: 'svc.small', replicas: 1 },
};
const STORAGE_DEFAULT = 10;
export const NAME_MAX = 19;
/** The fields on the form: an error naming one of them shows there. */
const FIELDS = ['name', 'engine', 'postgres_version', 'mysql_version', 'instance_type', 'storage_gb', 'replicas', 'external_access_enabled'];

/** What the API would refuse, said before submit (the same words as its 400s). */
export function localProblems(engine: Engine, instanceType: InstanceType, replicas: number): Partial<Record<string, string>> {
  const problems: Partial<Record<string, string>> = {};
  if (engine === 'mysql' && instanceType === 'svc.nano')
    problems.instance_type = 'mysql databases need svc.small or larger; svc.nano is not available for mysql';
  if (engine === 'mysql' && replicas % 2 === 0) problems.replicas = 'must be an odd number (1, 3, 5, ...) for mysql';
  return problems;
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
  const create = useMutation((body: ProvisionBody) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases', { params: { path: { workspaceID: workspaceId, vpcID: vpcId } }, body })),
  );
  const problems = localProblems(engine, instanceType, Number(replicas));
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
    if (instanceType === DEFAULTS[engine].instanceType) setInstanceType(DEFAULTS[next].instanceType);
    if (Number(replicas) === DEFAULTS[engine].replicas) setReplicas(String(DEFAULTS[next].replicas));
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
          if (version.trim()) body[engine === 'postgresql' ? 'postgres_version' : 'mysql_version'] = version.trim();
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
          <VersionField engine={engine} value={version} onInput={setVersion} error={err} />
          <Field
            name="instance_type"
            label="Instance type"
            error={err}
            problem={problems.instance_type}
            hint={`Default ${DEFAULTS[engine].instanceType} for ${engine === 'mysql' ? 'MySQL' : 'PostgreSQL'}.`}
          >
            {(a) => (
              <select {...a} value={instanceType} onChange={(e) => setInstanceType(e.currentTarget.value as InstanceType)}>
                {INSTANCE_TYPES.map(([type, size]) => (
                  <option key={type} value={type}>
                    {type} — {size}
                    {type === DEFAULTS[engine].instanceType ? ' (default)' : ''}
                    {engine === 'mysql' && type === 'svc.nano' ? ' (not for MySQL)' : ''}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field name="storage_gb" label="Storage (GB)" error={err} hint={`1 to 1024, default ${STORAGE_DEFAULT}; it can grow later, never shrink.`}>
            {(a) => <input {...a} type="number" min={1} max={1024} step={1} value={storage} onInput={(e) => setStorage(e.currentTarget.value)} />}
          </Field>
          <Field
            name="replicas"
            label="Replicas"
            error={err}
            problem={problems.replicas}
            hint={
              engine === 'mysql'
                ? 'MySQL: instances in the set, the primary included; odd only (1, 3, 5). Default 1.'
                : 'PostgreSQL: read replicas, 0 to the cluster’s maximum (5 on docker, 8 on kubernetes). Default 0.'
            }
          >
            {(a) => (
              <input
                {...a}
                type="number"
                min={engine === 'mysql' ? 1 : 0}
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
        {engine === 'mysql' && <MysqlRules />}
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

function VersionField(props: { engine: Engine; value: string; onInput: (v: string) => void; error: unknown }) {
  const field = props.engine === 'postgresql' ? 'postgres_version' : 'mysql_version';
  return (
    <Field
      name={field}
      id={`db-${field}`}
      label={props.engine === 'postgresql' ? 'PostgreSQL version' : 'MySQL version'}
      error={props.error}
      hint={
        props.engine === 'postgresql'
          ? 'Empty: the cluster’s default (docker: 15; kubernetes: 13–17, default 16).'
          : 'Empty: the cluster’s default (docker: MariaDB 10.11; kubernetes: 8.0 or 8.4, default 8.4).'
      }
    >
      {(a) => <input {...a} value={props.value} maxLength={20} placeholder="the cluster’s default" onInput={(e) => props.onInput(e.currentTarget.value)} />}
    </Field>
  );
}

/** The contract's mysql rules, on screen before the person submits. */
function MysqlRules() {
  return (
    <section class="panel rules" aria-labelledby="mysql-rules-title">
      <h2 id="mysql-rules-title">MySQL rules</h2>
      <ul>
        <li>
          No <code>svc.nano</code>: MySQL needs <code>svc.small</code> or larger (the default).
        </li>
        <li>
          <strong>Replicas</strong> count the instances in the set, the primary included, and must be odd: 1, 3 or 5. An even count is refused.
        </li>
        <li>Restores are of a named backup: there is no point-in-time recovery for MySQL.</li>
        <li>On the docker cluster the server is MariaDB 10.11, wire- and SQL-compatible with MySQL.</li>
      </ul>
    </section>
  );
}
