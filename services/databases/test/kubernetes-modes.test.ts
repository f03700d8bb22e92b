// How each engine's mode is chosen on kubernetes (PIER_DATABASES_KUBERNETES_OPERATOR and the
// CRDs installed) and how the port's calls are sent to the adapter of their engine. The
// adapters here are recorders: what each mode does is proven on the real cluster
// (kubernetes-real-builtin.test.ts) and against the real API server (kubernetes-real.test.ts).
import { describe, expect, it } from 'vitest';
import { readConfig } from '../src/config.ts';
import { describeModes, KubernetesModes, parseOperatorSetting } from '../src/cluster/kubernetes-modes.ts';
import type { ClusterDatabase, ClusterRef, DatabaseCluster } from '../src/domain/cluster-port.ts';
import type { Engine } from '../src/domain/database.ts';
import type { Observation } from '../src/domain/status.ts';

describe('PIER_DATABASES_KUBERNETES_OPERATOR', () => {
  it('names an operator, none, or one engine at a time; an engine left out is chosen by the CRDs', () => {
    expect(parseOperatorSetting('')).toEqual({});
    expect(parseOperatorSetting('none')).toEqual({ postgresql: 'builtin', mysql: 'builtin' });
    expect(parseOperatorSetting('cloudnative-pg')).toEqual({ postgresql: 'operator' });
    expect(parseOperatorSetting('cloudnative-pg, moco')).toEqual({ postgresql: 'operator', mysql: 'operator' });
    expect(parseOperatorSetting('moco,none')).toEqual({ postgresql: 'builtin', mysql: 'operator' });
    expect(parseOperatorSetting('postgresql=none,mysql=moco')).toEqual({ postgresql: 'builtin', mysql: 'operator' });
  });

  it('refuses what it does not know, naming it, at start', () => {
    expect(parseOperatorSetting('crunchy')).toMatch(/"crunchy" is not one of/);
    expect(parseOperatorSetting('mysql=cloudnative-pg')).toMatch(/"mysql=cloudnative-pg"/);
    expect(parseOperatorSetting('oracle=none')).toMatch(/"oracle" is not an engine/);
    expect(() => readConfig({ PIER_DATABASES_KUBERNETES_OPERATOR: 'crunchy' } as NodeJS.ProcessEnv)).toThrow(/PIER_DATABASES_KUBERNETES_OPERATOR/);
    expect(() => readConfig({ PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS: '10.88.0.0' } as NodeJS.ProcessEnv)).toThrow(/is not a CIDR/);
  });
});

/** An adapter that records the calls it gets, and knows the databases `owns` lists. */
function recorder(name: string, owns: ClusterRef[] = []) {
  const calls: string[] = [];
  const adapter = {
    capabilities: {
      adapter: 'kubernetes',
      engines: {
        postgresql: { versions: [name], defaultVersion: name, server: name, replicas: { min: 0, max: 1, default: 0, shrinks: true } },
        mysql: { versions: [name], defaultVersion: name, server: name, replicas: { min: 1, max: 1, default: 1, shrinks: true } },
      },
      enforcesStorage: true,
    },
    ping: async () => void calls.push('ping'),
    apply: async (db: ClusterDatabase) => void calls.push(`apply ${db.id}`),
    observe: async (_vpc: string, ids: string[]) =>
      new Map<string, Observation>(ids.map((id) => [id, owns.some((r) => r.id === id) ? { phase: 'ready' } : { phase: 'absent' }])),
    delete: async (db: ClusterRef) => void calls.push(`delete ${db.id}`),
    list: async () => owns,
    close: async () => void calls.push('close'),
  } as unknown as DatabaseCluster;
  return { adapter, calls };
}

const ref = (id: string, engine: Engine): ClusterRef => ({ id, shortId: id, vpcId: 'v', engine });

describe('the modes, per engine', () => {
  it('take the operator where its CRD is installed, the built-in mode elsewhere, once, and say so', async () => {
    const operator = recorder('op', [ref('m1', 'mysql')]);
    const builtin = recorder('bi', [ref('p1', 'postgresql')]);
    let asked = 0;
    let told = '';
    const modes = new KubernetesModes({
      setting: {},
      detector: { installed: async (e) => (asked++, e === 'mysql') },
      operator: () => operator.adapter,
      builtin: () => builtin.adapter,
      decided: (m) => (told = describeModes(m)),
    });
    expect(await modes.ping()).toBe('postgresql: built-in (no operator), mysql: moco');
    expect(told).toBe('postgresql: built-in (no operator), mysql: moco');
    await modes.decide();
    expect(asked).toBe(2);
    expect(modes.capabilities.engines.postgresql.server).toBe('bi');
    expect(modes.capabilities.engines.mysql.server).toBe('op');
    await modes.apply(ref('p1', 'postgresql') as ClusterDatabase);
    await modes.delete(ref('m1', 'mysql'));
    expect(builtin.calls).toContain('apply p1');
    expect(operator.calls).toContain('delete m1');
    // Both adapters observe; the one that finds a database tells.
    const seen = await modes.observe('v', ['p1', 'm1', 'gone']);
    expect(Object.fromEntries(seen)).toEqual({ p1: { phase: 'ready' }, m1: { phase: 'ready' }, gone: { phase: 'absent' } });
    expect((await modes.list()).map((r) => r.id).sort()).toEqual(['m1', 'p1']);
  });

  it('ask nothing of the cluster when both engines are configured, and use one adapter for both', async () => {
    const builtin = recorder('bi');
    let made = 0;
    const modes = new KubernetesModes({
      setting: { postgresql: 'builtin', mysql: 'builtin' },
      detector: {
        installed: async () => {
          throw new Error('not asked');
        },
      },
      operator: () => {
        throw new Error('no operator adapter');
      },
      builtin: () => (made++, builtin.adapter),
    });
    expect(await modes.ping()).toBe('postgresql: built-in (no operator), mysql: built-in (no operator)');
    await modes.close();
    expect(made).toBe(1);
    expect(builtin.calls.filter((c) => c === 'ping')).toHaveLength(1);
  });

  it('an API server that does not answer leaves the choice to a later call', async () => {
    let up = false;
    const modes = new KubernetesModes({
      setting: {},
      detector: {
        installed: async () => {
          if (!up) throw new Error('kubernetes API unreachable');
          return false;
        },
      },
      operator: () => recorder('op').adapter,
      builtin: () => recorder('bi').adapter,
    });
    await expect(modes.ping()).rejects.toThrow(/unreachable/);
    up = true;
    expect(await modes.ping()).toMatch(/postgresql: built-in/);
  });
});
