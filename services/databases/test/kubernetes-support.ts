/** What the kubernetes adapter's tests share: a database as the domain hands it to the adapter. */
import { randomUUID } from 'node:crypto';
import type { ClusterDatabase } from '../src/domain/cluster-port.ts';

/** A new database (a fresh id and VPC), postgresql unless `over` says otherwise. */
export function clusterDatabase(over: Partial<ClusterDatabase> = {}): ClusterDatabase {
  const id = randomUUID();
  const mysql = over.engine === 'mysql';
  return {
    id,
    shortId: id.slice(0, 8),
    workspaceId: randomUUID(),
    vpcId: randomUUID(),
    engine: 'postgresql',
    version: mysql ? '8.4' : '16',
    instanceType: 'svc.small',
    storageGb: 20,
    replicas: mysql ? 1 : 0,
    externalAccessEnabled: false,
    allowlist: [],
    restore: null,
    ...over,
  };
}
