// The events secrets publishes (through the outbox, in the transaction of the change).
// Subjects: pier.events.<workspace>.<vpc>.secret_created|secret_deleted.<secret id>.
// They say what happened to which secret; they never carry values.
import type { PierEvent } from '@pier/kit';
import type { SecretRecord } from './records.ts';

export const events = {
  created: (r: SecretRecord): PierEvent => ({
    kind: 'secret.created',
    workspaceId: r.workspaceId,
    vpcId: r.vpcId,
    resourceId: r.id,
    data: { id: r.id, name: r.name, keys: r.keys },
  }),
  deleted: (r: SecretRecord): PierEvent => ({
    kind: 'secret.deleted',
    workspaceId: r.workspaceId,
    vpcId: r.vpcId,
    resourceId: r.id,
    data: { id: r.id, name: r.name },
  }),
};
