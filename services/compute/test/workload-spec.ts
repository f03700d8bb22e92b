import { randomUUID } from 'node:crypto';
import { resourcesOf } from '@pier/kit';
import type { ObserveTarget, WorkloadSpec } from '../src/domain/cluster-port.ts';
import type { EnvEntry } from '../src/domain/env/env-input.ts';
import { configFromCreate, type CreateServiceInput } from '../src/domain/services/service-config.ts';

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

/** What the live status asks the cluster about a spec's service. */
export function target(s: WorkloadSpec): ObserveTarget {
  return {
    serviceId: s.serviceId,
    serviceType: s.config.service_type,
    deploymentId: s.deploymentId,
    replicas: s.config.min_replicas,
    port: s.config.port,
    healthCheckPath: s.config.health_check_path,
  };
}
