import { useState } from 'preact/hooks';
import { unwrap, type Role } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { useSession } from '../session.ts';
import { ErrorNote, ListTable, useConfirmedRemoval, when } from '../ui.tsx';

const ROLES: Role[] = ['owner', 'admin', 'developer', 'viewer'];

export function MembersPage() {
  const { client, workspaceId, canWrite } = useSession();
  const path = { workspaceID: workspaceId };
  const members = useQuery(`members:${workspaceId}`, async () => {
    const page = await unwrap(client.GET('/api/v1/workspaces/{workspaceID}/members', { params: { path, query: { limit: 200 } } }));
    return { items: page.items.map((m) => ({ ...m, id: m.user_id, name: m.email })) };
  });
  const changeRole = useMutation((userID: string, role: Role) =>
    unwrap(client.PATCH('/api/v1/workspaces/{workspaceID}/members/{userID}', { params: { path: { ...path, userID } }, body: { role } })),
  );
  const remove = useConfirmedRemoval({
    verb: 'Remove',
    noun: 'member',
    warning: 'They lose access to this workspace at once.',
    remove: (userID) => unwrap(client.DELETE('/api/v1/workspaces/{workspaceID}/members/{userID}', { params: { path: { ...path, userID } } })),
  });
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      <ErrorNote error={changeRole.error} />
      <ListTable
        query={members}
        kind="member"
        what="members"
        empty="No members."
        columns={['E-mail', 'Role', 'Added']}
        actions={canWrite ? remove.button : undefined}
        cells={(m) => (
          <>
            <td class="wrap">{m.email}</td>
            <td>
              {canWrite ? (
                <select
                  aria-label={`Role of ${m.email}`}
                  value={m.role}
                  disabled={changeRole.pending}
                  onChange={(e) => void changeRole.run(m.user_id, e.currentTarget.value as Role)}
                >
                  {ROLES.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
              ) : (
                m.role
              )}
            </td>
            <td>{when(m.created_at)}</td>
          </>
        )}
      />
      {canWrite && <AddMember />}
      {remove.dialog}
    </section>
  );
}

function AddMember() {
  const { client, workspaceId } = useSession();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const add = useMutation((body: { email: string; role: Role }) =>
    unwrap(client.POST('/api/v1/workspaces/{workspaceID}/members', { params: { path: { workspaceID: workspaceId } }, body })),
  );
  return (
    <div class="panel">
      <h2>Add a member</h2>
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          if (await add.run({ email: email.trim(), role })) setEmail('');
        }}
      >
        <label>
          E-mail
          <input type="email" required maxLength={254} value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Role
          <select aria-label="Role of the new member" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary" disabled={add.pending}>
          {add.pending ? 'Adding…' : 'Add member'}
        </button>
      </form>
      <ErrorNote error={add.error} />
    </div>
  );
}
