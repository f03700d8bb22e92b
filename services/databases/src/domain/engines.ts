import type { InstanceType } from '@pier/kit';
import { STORAGE_GB, type ClusterCapabilities } from './capabilities.ts';
import { ENGINES, type Engine } from './database.ts';
import { defaultInstanceType, instanceTypesOf, oddReplicasOnly } from './rules.ts';

// What a caller may ask of each engine on this installation's cluster: the same facts
// resolveProvision checks a provision against (rules.ts), read from the adapter, so a
// form built from them offers exactly what will be accepted.

export interface EngineOffer {
  engine: Engine;
  server: string;
  versions: readonly string[];
  defaultVersion: string;
  instanceTypes: InstanceType[];
  defaultInstanceType: InstanceType;
  replicas: { min: number; max: number; default: number; oddOnly: boolean; shrinks: boolean };
  storageGb: { min: number; max: number; default: number; enforced: boolean };
}

export function engineOffers(caps: ClusterCapabilities): EngineOffer[] {
  return ENGINES.map((engine) => {
    const c = caps.engines[engine];
    return {
      engine,
      server: c.server,
      versions: c.versions,
      defaultVersion: c.defaultVersion,
      instanceTypes: instanceTypesOf(engine),
      defaultInstanceType: defaultInstanceType(engine),
      replicas: { ...c.replicas, oddOnly: oddReplicasOnly(engine) },
      storageGb: { ...STORAGE_GB, enforced: caps.enforcesStorage },
    };
  });
}
