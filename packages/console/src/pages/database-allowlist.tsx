// The IP allowlist editor: the rules, adding one (CIDR and a description), removing one
// after a confirmation. An empty list admits every address (the contract), said on screen.
import { useState } from 'preact/hooks';
import { unwrap } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { FormError, ListTable, useConfirmedRemoval, when, TextField } from '../ui.tsx';
import type { DatabaseTabProps } from './databases.tsx';

export function Allowlist({ db, path }: DatabaseTabProps) {
  const { client, canWrite } = useSession();
  const rules = useQuery(`allowlist:${path.databaseID}`, async () => {
    const page = await unwrap(
      client.GET('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/ip-allowlist', { params: { path, query: { limit: 200 } } }),
    );
    return { items: page.items.map((r) => ({ ...r, name: r.cidr })) };
  });
  const remove = useConfirmedRemoval({
    verb: 'Remove',
    noun: 'rule',
    warning: 'Addresses it admitted are refused once no other rule admits them (an empty list admits everyone).',
    remove: (ruleID) =>
      unwrap(
        client.DELETE('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/ip-allowlist/{ruleID}', { params: { path: { ...path, ruleID } } }),
      ),
  });
  const empty = rules.data?.items.length === 0;
  return (
    <div class="panel">
      <h2>IP allowlist</h2>
      <p class="hint">
        {empty ? 'Empty: no IP restriction. ' : 'Only the addresses listed are admitted. '}
        It applies to connections from outside the platform
        {db.external_access_enabled ? '.' : ', and external access is off for this database.'}
      </p>
      <ListTable
        query={rules}
        kind="rule"
        what="the allowlist"
        empty="No rules: every address is admitted."
        caption="IP allowlist rules"
        columns={['CIDR', 'Description', 'Added']}
        actions={canWrite ? remove.button : undefined}
        cells={(r) => (
          <>
            <td>
              <code>{r.cidr}</code>
            </td>
            <td class="wrap">{r.description || '—'}</td>
            <td>{when(r.created_at)}</td>
          </>
        )}
      />
      {canWrite && <AddRule path={path} />}
      {remove.dialog}
    </div>
  );
}

function AddRule({ path }: Pick<DatabaseTabProps, 'path'>) {
  const { client } = useSession();
  const [cidr, setCidr] = useState('');
  const [description, setDescription] = useState('');
  const add = useMutation((body: { cidr: string; description: string }) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases/{databaseID}/ip-allowlist', { params: { path }, body })),
  );
  const err = add.error;
  return (
    <form
      class="inline"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await add.run({ cidr: cidr.trim(), description: description.trim() })) {
          setCidr('');
          setDescription('');
        }
      }}
    >
      <TextField name="cidr" id="rule-cidr" label="CIDR" error={err} input={{ required: true, placeholder: '203.0.113.0/24' }} value={cidr} onInput={setCidr} />
      <TextField
        name="description"
        id="rule-description"
        label="Description"
        error={err}
        input={{ maxLength: 200 }}
        value={description}
        onInput={setDescription}
      />
      <button type="submit" class="primary" disabled={add.pending}>
        {add.pending ? 'Adding…' : 'Add rule'}
      </button>
      <FormError error={err} fields={['cidr', 'description']} />
    </form>
  );
}
