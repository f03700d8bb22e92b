// Replicas and fork: changing the read replica count, and forking the database (from its
// latest backup) into a new one in this VPC or another VPC of the workspace.
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { Field, FormError, TextField } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

export function DatabaseSettings(props: DatabaseTabProps) {
  return (
    <>
      <Replicas {...props} />
      <Fork {...props} />
    </>
  );
}

function Replicas({ db, path }: DatabaseTabProps) {
  const { client } = useSession();
  const [count, setCount] = useState(String(db.replicas));
  const mysql = db.engine === 'mysql';
  const change = useMutation((replicas: number) =>
    unwrap(client.PATCH('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/replicas', { params: { path }, body: { replicas } })),
  );
  const err = change.error;
  const even = mysql && Number(count) % 2 === 0;
  return (
    <div class="panel">
      <h2>Replicas</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!even) await change.run(Number(count));
        }}
      >
        <Field
          name="replicas"
          id="replica-count"
          label="Replica count"
          error={err}
          problem={even ? 'must be an odd number (1, 3, 5, ...) for mysql' : undefined}
          hint={
            <>
              {mysql
                ? 'MySQL: instances in the set, the primary included; odd only (1, 3, 5).'
                : 'PostgreSQL: read replicas serving read_only_host, 0 to the cluster’s maximum. Each is metered as an instance of the plan.'}{' '}
              Now {db.replicas}.
            </>
          }
        >
          {(a) => <input {...a} type="number" min={mysql ? 1 : 0} step={mysql ? 2 : 1} value={count} onInput={(e) => setCount(e.currentTarget.value)} />}
        </Field>
        <button type="submit" class="primary" disabled={change.pending || Number(count) === db.replicas}>
          {change.pending ? 'Applying…' : 'Apply'}
        </button>
      </form>
      <FormError error={err} fields={['replicas']} />
    </div>
  );
}

function Fork({ db, path }: DatabaseTabProps) {
  const { client, workspaceId } = useSession();
  const [name, setName] = useState('');
  const [target, setTarget] = useState(path.vpcID);
  const [made, setMade] = useState<{ name: string; vpc: string; id: string } | null>(null);
  const vpcs = useQuery(`vpcs:${workspaceId}`, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID: workspaceId }, query: { limit: 200 } } })),
  );
  const fork = useMutation((body: { name: string; target_vpc_id: string }) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/fork', { params: { path }, body })),
  );
  const err = fork.error;
  const vpcName = (id: string) => vpcs.data?.items.find((v) => v.id === id)?.name ?? id;
  return (
    <div class="panel">
      <h2>Fork</h2>
      <p class="hint">
        A new, independent {db.engine === 'mysql' ? 'MySQL' : 'PostgreSQL'} database made from the latest backup of this one (as of that backup, not this
        instant; one is taken first when there is none). Writes to the fork never reach {db.name}.
      </p>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          setMade(null);
          const answer = await fork.run({ name: name.trim(), target_vpc_id: target });
          if (answer) {
            setMade({ name: answer.value.name, vpc: answer.value.vpc_id, id: answer.value.id });
            setName('');
          }
        }}
      >
        <TextField name="name" id="fork-name" label="Fork name" error={err} input={{ required: true, maxLength: 19 }} value={name} onInput={setName} />
        <Field name="target_vpc_id" id="fork-vpc" label="Into VPC" error={err}>
          {(a) => (
            <select {...a} value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
              {(vpcs.data?.items ?? [{ id: path.vpcID, name: 'this VPC' }]).map((v) => (
                <option key={v.id} value={v.id}>
                  {v.name}
                  {v.id === path.vpcID ? ' (this VPC)' : ''}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" class="primary" disabled={fork.pending}>
          {fork.pending ? 'Forking…' : 'Fork'}
        </button>
      </form>
      <FormError error={err} fields={['name', 'target_vpc_id']} />
      {made && (
        <p class="note" role="status">
          {made.vpc === path.vpcID ? (
            <>
              <a href={`/databases/${encodeURIComponent(made.id)}`}>{made.name}</a> is being created in this VPC.
            </>
          ) : (
            <>
              {made.name} is being created in VPC {vpcName(made.vpc)}: choose that VPC above to follow it.
            </>
          )}
        </p>
      )}
    </div>
  );
}
