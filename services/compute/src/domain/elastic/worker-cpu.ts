// Workers take no requests, so nothing counts their load in flight: they scale on the CPU
// their replicas use, as Kubernetes' HorizontalPodAutoscaler scales every service there
// (and with its rules, so a worker behaves alike on both clusters): the average use of the
// replicas, each against the CPU it was given, aims at a target (80% by default,
// PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT), and wanted = ceil(current × average / target).
import type { ServiceConfig } from '../services/service-config.ts';
import { replicaFloor } from '../services/service-config.ts';

/**
 * How often a worker's CPU is read: a use is a difference between two reads, so one every
 * tick (200 ms in tests) would be mostly noise and as many Engine API calls per replica.
 */
export const CPU_SAMPLE_MS = 2_000;

/** The HPA's default tolerance: within 10% of the target nothing changes, so noise around it does not flap the count. */
export const CPU_TOLERANCE = 0.1;

/**
 * The replicas a worker wants for the CPU its replicas used (`used`: one per replica read
 * twice, each a fraction of the CPU it was given), within its floor and max_replicas.
 * Replicas not measured yet (just started) count as the HPA counts them: as idle when the
 * others say up, so one busy replica is not counted again for each new one, and as on
 * target when they say down, so a replica not read yet is not taken for an idle one.
 */
export function wantedForCpu(config: ServiceConfig, current: number, used: number[], target: number): number {
  const floor = replicaFloor(config);
  const max = Math.max(floor, config.max_replicas ?? floor);
  const within = (n: number) => Math.min(max, Math.max(floor, n));
  if (used.length === 0 || current === 0) return within(current);
  const sum = used.reduce((a, b) => a + b, 0);
  const missing = Math.max(0, current - used.length);
  const total = sum + (sum / used.length > target ? 0 : missing * target);
  const ratio = total / (current * target);
  if (Math.abs(ratio - 1) <= CPU_TOLERANCE) return within(current);
  // The epsilon keeps float noise (2.0000000001) from asking for one replica more.
  return within(Math.ceil(current * ratio - 1e-9));
}

/** `42%`: a fraction of the CPU given, as the events and logs say it. */
export function percent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}
