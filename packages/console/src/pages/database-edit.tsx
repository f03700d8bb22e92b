// Edit a database: what the contract's PATCH takes — its name, instance type, storage
// (grows only) and external access — filled with what it has now. Only what changed is
// sent; the API's 400 or 409 shows at the field it names. Instance types are checked
// against the cluster's offer (database-engines.tsx) when it was read, else the contract's rule.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation } from '../data.ts';
import { useSession } from '../session.ts';
import { Field, FormError, TextField } from '../ui.tsx';
import { INSTANCE_TYPES, localProblems, NAME_MAX, type InstanceType } from './database-create.tsx';
import { useEngineOffers } from './database-engines.tsx';
import type { DatabaseTabProps } from './databases.tsx';

const ONE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}' as const;
type PatchBody = NonNullable<paths[typeof ONE]['patch']['requestBody']>['content']['application/json'];
const FIELDS = ['name', 'instance_type', 'storage_gb', 'external_access_enabled'];

export function EditDatabase({ db, path }: DatabaseTabProps) {
  const { client } = useSession();
  const [name, setName] = useState(db.name);
  const [instanceType, setInstanceType] = useState<InstanceType>(db.instance_type);
  const [storage, setStorage] = useState(String(db.storage_gb));
  const [external, setExternal] = useState(db.external_access_enabled);
  const [saved, setSaved] = useState(false);
  const save = useMutation((body: PatchBody) => unwrap(client.PATCH(ONE, { params: { path }, body })));
  const err = save.error;
  const offer = useEngineOffers(client).data?.items.find((o) => o.engine === db.engine);
  // The sizes the engine runs on, said before submit (replicas are not changed here: 1 keeps their rule quiet).
  const problem = localProblems(db.engine, instanceType, db.engine === 'mysql' ? 1 : 0, offer).instance_type;
  const body: PatchBody = {};
  if (name.trim() !== db.name) body.name = name.trim();
  if (instanceType !== db.instance_type) body.instance_type = instanceType;
  if (Number(storage) !== db.storage_gb) body.storage_gb = Number(storage);
  if (external !== db.external_access_enabled) body.external_access_enabled = external;
  const unchanged = Object.keys(body).length === 0;
  return (
    <div class="panel">
      <h2>Edit</h2>
      <form
        noValidate
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          if (!problem && !unchanged && (await save.run(body))) setSaved(true);
        }}
      >
        <div class="form-grid">
          <TextField
            name="name"
            id="edit-db-name"
            label="Name"
            error={err}
            hint={`Up to ${NAME_MAX} lowercase letters, digits and hyphens; unique in the VPC.`}
            input={{ required: true, maxLength: NAME_MAX, autoComplete: 'off' }}
            value={name}
            onInput={setName}
          />
          <Field name="instance_type" id="edit-db-instance_type" label="Instance type" error={err} problem={problem} hint={`Now ${db.instance_type}.`}>
            {(a) => (
              <select {...a} value={instanceType} onChange={(e) => setInstanceType(e.currentTarget.value as InstanceType)}>
                {INSTANCE_TYPES.map(([type, size]) => (
                  <option key={type} value={type}>
                    {type} — {size}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field
            name="storage_gb"
            id="edit-db-storage_gb"
            label="Storage (GB)"
            error={err}
            hint={`Now ${db.storage_gb}; it can grow, never shrink (up to 1024).`}
          >
            {(a) => <input {...a} type="number" min={db.storage_gb} max={1024} step={1} value={storage} onInput={(e) => setStorage(e.currentTarget.value)} />}
          </Field>
        </div>
        <Field
          check
          name="external_access_enabled"
          id="edit-db-external"
          label="External access"
          error={err}
          hint="Reachable from outside the platform; the IP allowlist can then restrict who connects."
        >
          {(a) => <input {...a} type="checkbox" checked={external} onChange={(e) => setExternal(e.currentTarget.checked)} />}
        </Field>
        <FormError error={err} fields={FIELDS} />
        <div class="actions">
          <button type="submit" class="primary" disabled={save.pending || unchanged}>
            {save.pending ? 'Saving…' : 'Save changes'}
          </button>
        </div>
        {saved && (
          <p class="note" role="status">
            Saved.
          </p>
        )}
      </form>
    </div>
  );
}
