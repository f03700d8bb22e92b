// PATCH replicas: the number of read replicas (postgresql) or of instances in the set
// (mysql, odd). The same pending-first write as a resize (update.ts): recorded as a
// pending change, applied (the cluster starts or removes replica servers), committed with
// `database.updated`. The answer comes once the cluster has the new replicas to start;
// each one is ready when it has copied the primary, and until then the database reads
// `running` with the primary serving (a replica that cannot start puts it in `error`
// with the reason).
import { ConflictError, InputError } from '@pier/kit';
import type { DatabaseRecord } from './database.ts';
import { checkReplicas } from './rules.ts';
import { changeInCluster } from './update.ts';
import { findMutable, type DatabasesContext, type Scope } from './context.ts';

export async function setReplicas(ctx: DatabasesContext, scope: Scope, id: string, replicas: number): Promise<DatabaseRecord> {
  const found = await findMutable(ctx, scope, id);
  checkReplicas(found.engine, replicas, ctx.cluster.capabilities);
  return ctx.locks.run(found.id, async () => {
    const current = await findMutable(ctx, scope, id);
    if (current.status === 'creating') throw new ConflictError('replicas can be changed once the database is running', 'database_not_running');
    if (replicas === current.replicas) return current;
    const bounds = ctx.cluster.capabilities.engines[current.engine].replicas;
    if (replicas < current.replicas && !bounds.shrinks) {
      throw new InputError(
        `replicas: the ${ctx.cluster.capabilities.adapter} cluster cannot remove ${current.engine} instances (it has ${current.replicas}); the count can only grow`,
        'invalid_request',
        { field: 'replicas' },
      );
    }
    const change = {
      instanceType: current.instanceType,
      storageGb: current.storageGb,
      externalAccessEnabled: current.externalAccessEnabled,
      replicas,
    };
    return changeInCluster(ctx, current, change);
  });
}
