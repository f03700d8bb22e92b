import { randomUUID } from 'node:crypto';
import { resourcesOf } from '@pier/kit';
import type { WorkloadSpec } from '../src/domain/cluster-port.ts';
import type { EnvEntry } from '../src/domain/env-vars.ts';
import { configFromCreate, type CreateServiceInput } from '../src/domain/service-config.ts';

/** What a first rollout of a new service made from `input` asks a cluster adapter for (the adapters' own tests). */
export function workloadSpec(
  scope: { workspaceId: string; vpcId: string },
  input: CreateServiceInput,
  env: EnvEntry[] = [],
  image = 'registry.example/app:v1',
): WorkloadSpec {
  const config = configFromCreate(input);
  return {
    ...scope,
    serviceId: randomUUID(),
    serviceName: input.name,
    deploymentId: randomUUID(),
    image,
    config,
    resources: resourcesOf(config.instance_type),
    env,
  };
}
