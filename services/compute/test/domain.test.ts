// The spec's rules, without I/O: configuration defaults and cross-field rules, PATCH
// merging, image references, schedules, and how live status is judged.
import { describe, it, expect } from 'vitest';
import { InputError, INSTANCE_TYPES } from '@pier/kit';
import { configFromCreate, configFromPatch, createServiceBody, isElastic, workloadChanged } from '../src/domain/services/service-config.ts';
import { isBareTag, repositoryOf, resolveImage } from '../src/domain/services/image-reference.ts';
import { liveStatus, PROGRESS_DEADLINE_MS, type DeploymentState, type Observation } from '../src/domain/services/status.ts';
import { judge, MIN_READY_MS, type ReplicaUnit } from '../src/cluster/replicas.ts';
import { entriesFromPut, putEnvBody } from '../src/domain/env/env-input.ts';
import { wantedReplicas } from '../src/domain/elastic/elastic-controller.ts';
import { wantedForCpu } from '../src/domain/elastic/worker-cpu.ts';

const fieldOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof InputError) return (err.details as { field?: string } | undefined)?.field;
    throw err;
  }
  return undefined;
};

describe('service configuration', () => {
  it("fills the spec's defaults", () => {
    expect(configFromCreate({ name: 'a' })).toEqual({
      name: 'a',
      service_type: 'web',
      instance_type: 'svc.nano',
      deployment_mode: 'always_on',
      image: null,
      port: 8080,
      health_check_path: null,
      min_replicas: 1,
      max_replicas: null,
      cron_schedule: null,
      disk_size_gb: null,
      disk_mount_path: null,
      command: null,
      args: null,
      run_as_user: 1000,
      idle_timeout_seconds: null,
      target_concurrency: 25,
    });
    expect(configFromCreate({ name: 'w', service_type: 'worker' }).port).toBeNull();
    expect(configFromCreate({ name: 'w', service_type: 'worker' }).target_concurrency).toBeNull();
    // on_demand scales to zero by default (the contract's min_replicas 0) and sleeps after 15 minutes.
    expect(configFromCreate({ name: 'o', deployment_mode: 'on_demand' })).toMatchObject({ min_replicas: 0, idle_timeout_seconds: 900 });
    expect(configFromCreate({ name: 'c', service_type: 'cron', cron_schedule: '@daily' }).port).toBeNull();
  });

  it('documents a ladder from svc.nano to svc.xlarge that only grows', () => {
    const steps = Object.values(INSTANCE_TYPES);
    expect(Object.keys(INSTANCE_TYPES)).toEqual(['svc.nano', 'svc.micro', 'svc.small', 'svc.medium', 'svc.large', 'svc.xlarge']);
    for (let i = 1; i < steps.length; i++) {
      expect(steps[i]!.cpu).toBeGreaterThanOrEqual(steps[i - 1]!.cpu);
      expect(steps[i]!.memoryMiB).toBeGreaterThan(steps[i - 1]!.memoryMiB);
    }
  });

  it('takes null as absent on create and rejects unknown fields', () => {
    expect(createServiceBody.safeParse({ name: 'a', port: null }).success).toBe(true);
    expect(createServiceBody.safeParse({ name: 'a', replicas: 2 }).success).toBe(false);
  });

  it('keeps the elastic fields to where they apply, naming the field', () => {
    expect(() => configFromCreate({ name: 'a', idle_timeout_seconds: 60 })).toThrow(/^idle_timeout_seconds: /);
    expect(() => configFromCreate({ name: 'w', service_type: 'worker', target_concurrency: 3 })).toThrow(/^target_concurrency: /);
    const sleepy = configFromCreate({ name: 's', deployment_mode: 'on_demand', idle_timeout_seconds: 60 });
    // Back to always_on: the timeout goes with the mode; asked for anyway, it is refused.
    expect(configFromPatch(sleepy, { deployment_mode: 'always_on', min_replicas: 1 }).idle_timeout_seconds).toBeNull();
    expect(() => configFromPatch(sleepy, { deployment_mode: 'always_on', min_replicas: 1, idle_timeout_seconds: 60 })).toThrow(/^idle_timeout_seconds: /);
    // A web service becoming a worker drops its target concurrency.
    expect(configFromPatch(configFromCreate({ name: 'w' }), { service_type: 'worker' }).target_concurrency).toBeNull();
  });

  it('wants replicas for the requests in flight, within the floor and max_replicas', () => {
    const web = configFromCreate({ name: 'w', min_replicas: 1, max_replicas: 3, target_concurrency: 10 });
    expect([0, 1, 10, 11, 25, 1000].map((peak) => wantedReplicas(web, peak))).toEqual([1, 1, 1, 2, 3, 3]);
    // An awake on_demand service's floor is one replica.
    const sleepy = configFromCreate({ name: 's', deployment_mode: 'on_demand', max_replicas: 2, target_concurrency: 1 });
    expect([0, 1, 2, 5].map((peak) => wantedReplicas(sleepy, peak))).toEqual([1, 1, 2, 2]);
  });

  it('wants worker replicas for their CPU as the HPA does: ceil(current × average / target), within the floor and max_replicas', () => {
    const worker = configFromCreate({ name: 'jobs', service_type: 'worker', min_replicas: 1, max_replicas: 3 });
    expect(isElastic(worker)).toBe(true);
    expect(isElastic({ ...worker, max_replicas: 1 })).toBe(false);
    expect(isElastic({ ...worker, max_replicas: null })).toBe(false);
    const wanted = (current: number, used: number[]) => wantedForCpu(worker, current, used, 0.8);
    // A busy loop uses all it is given: one more replica each time, never past max_replicas.
    expect([wanted(1, [1]), wanted(2, [1, 1]), wanted(3, [1, 1, 1])]).toEqual([2, 3, 3]);
    // 2 × 1.3 / 0.8 = 3.25, and 1 × 0.4 / 0.8 = 0.5: bounded by max_replicas and the floor.
    expect([wanted(2, [1.3, 1.3]), wanted(1, [0.4]), wanted(3, [0, 0, 0])]).toEqual([3, 1, 1]);
    // 3 × 0.3 / 0.8 = 1.125 rounds up to 2; within 10% of the target nothing moves.
    expect([wanted(3, [0.3, 0.3, 0.3]), wanted(2, [0.85, 0.75]), wanted(2, [0.73, 0.73])]).toEqual([2, 2, 2]);
    // A replica just started (not read yet) is idle when the others say up, on target when they say down.
    expect([wanted(2, [1]), wanted(3, [0.4, 0.4])]).toEqual([2, 2]);
    // Nothing read yet: the count stays.
    expect(wanted(2, [])).toBe(2);
  });

  it('merges a PATCH, clearing what belonged to the old type', () => {
    const web = configFromCreate({ name: 'a', health_check_path: '/h' });
    const worker = configFromPatch(web, { service_type: 'worker' });
    expect(worker).toMatchObject({ service_type: 'worker', port: null, health_check_path: null });
    const back = configFromPatch(worker, { service_type: 'web' });
    expect(back.port).toBe(8080);
    expect(configFromPatch(web, { max_replicas: 4 }).max_replicas).toBe(4);
    expect(configFromPatch(configFromPatch(web, { max_replicas: 4 }), { max_replicas: null }).max_replicas).toBeNull();
    expect(fieldOf(() => configFromPatch(web, { name: 'b' }))).toBe('name');
    expect(fieldOf(() => configFromPatch(web, { service_type: 'cron' }))).toBe('cron_schedule');
    expect(fieldOf(() => configFromPatch(web, { min_replicas: 0 }))).toBe('min_replicas');
    expect(configFromPatch(web, { deployment_mode: 'on_demand', min_replicas: 0 }).min_replicas).toBe(0);
  });

  it('tells which changes the containers must see', () => {
    const a = configFromCreate({ name: 'a', image: 'x/y:1' });
    expect(workloadChanged(a, { ...a, image: 'x/y:2' })).toBe(false);
    expect(workloadChanged(a, { ...a, instance_type: 'svc.small' })).toBe(true);
  });
});

describe('image references', () => {
  it('appends a bare tag to the configured repository and keeps a full reference', () => {
    expect(isBareTag('v2')).toBe(true);
    expect(isBareTag('repo/app:v2')).toBe(false);
    expect(repositoryOf('registry.example:5000/team/app:v1')).toBe('registry.example:5000/team/app');
    expect(repositoryOf('registry.example:5000/team/app')).toBe('registry.example:5000/team/app');
    expect(repositoryOf('app@sha256:' + 'a'.repeat(64))).toBe('app');
    expect(resolveImage('v2', 'registry.example:5000/team/app:v1')).toBe('registry.example:5000/team/app:v2');
    expect(resolveImage('other/app:3', 'registry.example/team/app:v1')).toBe('other/app:3');
    expect(fieldOf(() => resolveImage('v2', null))).toBe('image_tag');
    expect(fieldOf(() => resolveImage('Not A Ref', 'a/b:1'))).toBe('image_tag');
  });
});

describe('environment entries', () => {
  it('accepts literals and references, refuses duplicates and half references', () => {
    const ok = putEnvBody.parse({
      variables: [
        { key: 'A', value: '1' },
        { key: 'B', secret_id: '6f1c1a52-7d2e-4a8e-9d55-1f6f3d7d8a10', secret_key: 'k' },
      ],
    });
    expect(entriesFromPut(ok)).toHaveLength(2);
    expect(putEnvBody.safeParse({ variables: [{ key: '1A', value: '1' }] }).success).toBe(false);
    expect(putEnvBody.safeParse({ variables: [{ key: 'A', value: '1', secret_id: 'x', secret_key: 'y' }] }).success).toBe(false);
    expect(putEnvBody.safeParse({ variables: [{ key: 'A', secret_id: 'x' }] }).success).toBe(false);
    expect(
      fieldOf(() =>
        entriesFromPut({
          variables: [
            { key: 'A', value: '1' },
            { key: 'A', value: '2' },
          ],
        }),
      ),
    ).toBe('variables.1.key');
  });
});

describe('live status', () => {
  const now = new Date('2026-01-01T12:00:00Z');
  const deployment = (over: Partial<DeploymentState> = {}): DeploymentState => ({
    id: 'd1',
    status: 'deploying',
    reason: 'deploy',
    applied: true,
    message: null,
    createdAt: new Date(now.getTime() - 10_000),
    ...over,
  });
  const obs = (phase: Observation['phase'], message: string | null = null): Observation => ({ phase, readyReplicas: 0, message });

  it('follows a rollout: deploying, then running or crashed, settling the deployment', () => {
    expect(liveStatus('deploying', deployment(), obs('progressing'), now)).toEqual({ status: 'deploying', message: null });
    expect(liveStatus('restarting', deployment({ reason: 'restart' }), obs('progressing'), now).status).toBe('restarting');
    expect(liveStatus('creating', deployment({ reason: 'create' }), obs('absent'), now).status).toBe('creating');
    expect(liveStatus('deploying', deployment(), obs('ready'), now)).toMatchObject({ status: 'running', deployment: { status: 'succeeded' } });
    expect(liveStatus('deploying', deployment(), obs('failed', 'boom'), now)).toMatchObject({
      status: 'crashed',
      message: 'boom',
      deployment: { status: 'failed' },
    });
    const late = deployment({ createdAt: new Date(now.getTime() - PROGRESS_DEADLINE_MS - 1) });
    expect(liveStatus('deploying', late, obs('progressing'), now)).toMatchObject({ status: 'crashed', deployment: { status: 'failed' } });
  });

  it('resyncs a settled service to the cluster: killed outside reads crashed, scaled reads scaled', () => {
    const done = deployment({ status: 'succeeded' });
    expect(liveStatus('running', done, obs('failed', 'exited'), now)).toEqual({ status: 'crashed', message: 'exited' });
    expect(liveStatus('running', done, obs('absent'), now).status).toBe('crashed');
    expect(liveStatus('crashed', done, obs('ready'), now)).toEqual({ status: 'running', message: null });
    expect(liveStatus('running', done, obs('scaled'), now).status).toBe('scaled');
    expect(liveStatus('deleting', done, obs('absent'), now).status).toBe('deleting');
    expect(liveStatus('creating', null, obs('absent'), now).status).toBe('creating');
    expect(liveStatus('crashed', deployment({ status: 'failed', applied: false, message: 'missing secret: x' }), obs('ready'), now)).toEqual({
      status: 'crashed',
      message: 'missing secret: x',
    });
  });

  it('keeps a failed deployment crashed while the cluster restarts it, until a replica is ready', () => {
    const failed = deployment({ status: 'failed', message: 'replica 0 is restart-looping (last exit code 1)' });
    expect(liveStatus('crashed', failed, obs('progressing'), now)).toEqual({ status: 'crashed', message: 'replica 0 is restart-looping (last exit code 1)' });
    expect(liveStatus('crashed', failed, obs('ready'), now)).toEqual({ status: 'running', message: null });
    // A deployment that succeeded still serves while a replica is replaced.
    expect(liveStatus('running', deployment({ status: 'succeeded' }), obs('progressing'), now)).toEqual({ status: 'running', message: null });
  });

  it('judges replicas: all ready, one failing, one missing, none wanted', () => {
    const t = { serviceId: 's', serviceType: 'web' as const, deploymentId: 'd1', replicas: 2, port: 8080, healthCheckPath: '/h' };
    const unit = (state: ReplicaUnit['state'], deploymentId = 'd1'): ReplicaUnit => ({ deploymentId, role: 'replica', state, message: state, createdAt: 0 });
    const docker = { missingIsFailure: true, cronNeedsTemplate: true };
    expect(judge(t, [unit('ready'), unit('ready')], docker).phase).toBe('ready');
    expect(judge(t, [unit('ready'), unit('failed')], docker).phase).toBe('failed');
    expect(judge(t, [unit('ready')], docker).phase).toBe('failed');
    expect(judge(t, [unit('ready')], { ...docker, missingIsFailure: false }).phase).toBe('progressing');
    expect(judge(t, [unit('ready', 'old')], docker).phase).toBe('progressing');
    expect(judge(t, [], docker).phase).toBe('absent');
    expect(judge({ ...t, replicas: 0 }, [], docker).phase).toBe('scaled');
    expect(MIN_READY_MS).toBeGreaterThan(0);
  });
});
