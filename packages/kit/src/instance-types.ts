/**
 * The instance ladder every service sizes its workloads by (compute's services and the
 * databases alike), so a `svc.*` name means the same CPU and memory everywhere. The spec
 * names `svc.nano` through `svc.xlarge` with `svc.small` among them; the steps between are
 * ours. Each step at least doubles what the one below gives, except `large`, which buys
 * memory at the same CPU (memory-heavy workloads are the common reason to outgrow
 * `medium`). Limits equal requests: a replica gets exactly this, no burst. Rules about
 * which types a kind of workload may use stay in its service (mysql is not run on nano).
 */
export const INSTANCE_TYPES = {
  'svc.nano': { cpu: 0.25, memoryMiB: 256 },
  'svc.micro': { cpu: 0.5, memoryMiB: 512 },
  'svc.small': { cpu: 1, memoryMiB: 1024 },
  'svc.medium': { cpu: 2, memoryMiB: 2048 },
  'svc.large': { cpu: 2, memoryMiB: 4096 },
  'svc.xlarge': { cpu: 4, memoryMiB: 8192 },
} as const;

export type InstanceType = keyof typeof INSTANCE_TYPES;
export const INSTANCE_TYPE_NAMES = Object.keys(INSTANCE_TYPES) as [InstanceType, ...InstanceType[]];

export interface InstanceResources {
  cpu: number;
  memoryMiB: number;
}

export function resourcesOf(type: InstanceType): InstanceResources {
  return INSTANCE_TYPES[type];
}

/**
 * Docker HostConfig limits for these resources. Docker refuses a CPU limit above the
 * host's CPU count, so on a small host the bigger types get the whole host.
 */
export function dockerLimits(r: InstanceResources, hostCpus: number): { NanoCpus: number; Memory: number; MemorySwap: number } {
  const memory = r.memoryMiB * 1024 * 1024;
  // MemorySwap = Memory: no swap beyond the limit; out of memory is out of memory.
  return { NanoCpus: Math.round(Math.min(r.cpu, hostCpus) * 1e9), Memory: memory, MemorySwap: memory };
}
