// Plans a database runs on. The spec names `svc.nano` through `svc.xlarge`; the sizes
// are Pier's choice, documented in services/databases/README.md. Both cluster adapters
// turn them into the same CPU and memory limits.

export const INSTANCE_TYPES = {
  'svc.nano': { cpus: 0.25, memoryMb: 256 },
  'svc.micro': { cpus: 0.5, memoryMb: 512 },
  'svc.small': { cpus: 1, memoryMb: 1024 },
  'svc.medium': { cpus: 2, memoryMb: 2048 },
  'svc.large': { cpus: 4, memoryMb: 4096 },
  'svc.xlarge': { cpus: 8, memoryMb: 8192 },
} as const;

export type InstanceType = keyof typeof INSTANCE_TYPES;
export const INSTANCE_TYPE_NAMES = Object.keys(INSTANCE_TYPES) as [InstanceType, ...InstanceType[]];

export function resourcesOf(type: InstanceType): { cpus: number; memoryMb: number } {
  return INSTANCE_TYPES[type];
}
