import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import type { Engine } from '../domain/database.ts';
import type { Observation } from '../domain/status.ts';
import type { BackupMethod } from '../domain/backup-records.ts';
import type { ClusterDatabase, ClusterRef, DatabaseCluster } from '../domain/cluster-port.ts';
import { KubernetesObjects } from './kubernetes-objects.ts';

// On kubernetes each engine runs either under its operator (CloudNativePG, MOCO:
// kubernetes.ts) or built in, by Pier itself from its own images (kubernetes-builtin.ts).
// PIER_DATABASES_KUBERNETES_OPERATOR chooses per engine; an engine it leaves out takes its
// operator when the cluster serves the operator's CRD, else the built-in mode. The choice
// is made once the API server answers (at start, or at the first call after), and stays.

export type EngineMode = 'operator' | 'builtin';
export type OperatorSetting = Partial<Record<Engine, EngineMode>>;

const OPERATOR_OF: Record<Engine, string> = { postgresql: 'cloudnative-pg', mysql: 'moco' };
/** The CRD whose presence means the engine's operator is installed. */
const OPERATOR_CRD: Record<Engine, string> = { postgresql: 'clusters.postgresql.cnpg.io', mysql: 'mysqlclusters.moco.cybozu.com' };

/**
 * PIER_DATABASES_KUBERNETES_OPERATOR: comma-separated; `cloudnative-pg` and `moco` choose
 * their engine's operator, `none` the built-in mode for every engine not named otherwise,
 * `postgresql=none` / `mysql=moco` one engine. Unset: both chosen by the CRDs installed.
 */
export function parseOperatorSetting(text: string): OperatorSetting | string {
  const out: OperatorSetting = {};
  let rest: EngineMode | undefined;
  for (const token of text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)) {
    const [left, right] = token.includes('=') ? token.split('=', 2) : [undefined, token];
    const engines = left === undefined ? (['postgresql', 'mysql'] as Engine[]) : left === 'postgresql' || left === 'mysql' ? [left as Engine] : null;
    if (!engines) return `"${left}" is not an engine (postgresql, mysql)`;
    if (right === 'none') {
      if (left === undefined) rest = 'builtin';
      else out[engines[0]!] = 'builtin';
      continue;
    }
    const engine = (Object.keys(OPERATOR_OF) as Engine[]).find((e) => OPERATOR_OF[e] === right);
    if (!engine || (left !== undefined && left !== engine))
      return `"${token}" is not one of cloudnative-pg, moco, none (or postgresql=cloudnative-pg|none, mysql=moco|none)`;
    out[engine] = 'operator';
  }
  for (const e of ['postgresql', 'mysql'] as Engine[]) if (rest && !out[e]) out[e] = rest;
  return out;
}

/** How an engine runs, in a person's words (the start log and GET /readyz). */
export function describeModes(modes: Record<Engine, EngineMode>): string {
  return (['postgresql', 'mysql'] as Engine[]).map((e) => `${e}: ${modes[e] === 'operator' ? OPERATOR_OF[e] : 'built-in (no operator)'}`).join(', ');
}

/** Reads which CRDs the cluster serves (apiextensions), for the engines left to choose. */
export class OperatorDetector extends KubernetesObjects {
  async installed(engine: Engine): Promise<boolean> {
    return this.guard(
      async () => (await this.read<KubernetesObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition', OPERATOR_CRD[engine], '')) !== undefined,
    );
  }
}

export interface ModeSources {
  setting: OperatorSetting;
  detector: { installed(engine: Engine): Promise<boolean> };
  operator: () => DatabaseCluster;
  builtin: () => DatabaseCluster;
  /** Told once the modes are decided (the start log). */
  decided?: (modes: Record<Engine, EngineMode>) => void;
}

/** The port, each call sent to the adapter of its database's engine. */
export class KubernetesModes implements DatabaseCluster {
  private modes?: Record<Engine, EngineMode>;
  private deciding?: Promise<Record<Engine, EngineMode>>;
  private readonly adapters = new Map<EngineMode, DatabaseCluster>();

  constructor(private readonly sources: ModeSources) {}

  /** Before the choice is made, an engine's capabilities are those of its configured (or likeliest) mode; refreshed once decided. */
  get capabilities(): ClusterCapabilities {
    const mode = (e: Engine): EngineMode => this.modes?.[e] ?? this.sources.setting[e] ?? 'builtin';
    return {
      adapter: 'kubernetes',
      engines: { postgresql: this.adapter(mode('postgresql')).capabilities.engines.postgresql, mysql: this.adapter(mode('mysql')).capabilities.engines.mysql },
      enforcesStorage: true,
    };
  }

  private adapter(mode: EngineMode): DatabaseCluster {
    let a = this.adapters.get(mode);
    if (!a) {
      a = mode === 'operator' ? this.sources.operator() : this.sources.builtin();
      this.adapters.set(mode, a);
    }
    return a;
  }

  /** The modes, deciding them (once) if not yet: an unreachable API server is a 503 until it answers. */
  async decide(): Promise<Record<Engine, EngineMode>> {
    if (this.modes) return this.modes;
    this.deciding ??= (async () => {
      const { setting, detector } = this.sources;
      const choose = async (e: Engine): Promise<EngineMode> => setting[e] ?? ((await detector.installed(e)) ? 'operator' : 'builtin');
      const [postgresql, mysql] = await Promise.all([choose('postgresql'), choose('mysql')]);
      this.modes = { postgresql, mysql };
      this.sources.decided?.(this.modes);
      return this.modes;
    })().finally(() => (this.deciding = undefined));
    return this.deciding;
  }

  private async of(engine: Engine): Promise<DatabaseCluster> {
    return this.adapter((await this.decide())[engine]);
  }

  /** The adapters in use, each once. */
  private async inUse(): Promise<DatabaseCluster[]> {
    const modes = await this.decide();
    return [...new Set([modes.postgresql, modes.mysql])].map((m) => this.adapter(m));
  }

  /** Pings the cluster and says how each engine runs (GET /readyz shows it). */
  async ping(): Promise<string> {
    for (const a of await this.inUse()) await a.ping();
    return describeModes(this.modes!);
  }

  async apply(db: ClusterDatabase): Promise<void> {
    return (await this.of(db.engine)).apply(db);
  }

  /** The ids carry no engine: each adapter in use observes them all, and the one that finds a database tells. */
  async observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>> {
    const seen = await Promise.all((await this.inUse()).map((a) => a.observe(vpcId, ids)));
    return new Map(ids.map((id) => [id, seen.map((m) => m.get(id)).find((o) => o && o.phase !== 'absent') ?? { phase: 'absent' }]));
  }

  async delete(db: ClusterRef): Promise<void> {
    return (await this.of(db.engine)).delete(db);
  }

  async list(): Promise<ClusterRef[]> {
    const lists = await Promise.all((await this.inUse()).map((a) => a.list()));
    // Both adapters list Services and Secrets: a database may be found twice.
    return lists.flat().filter((ref, i, all) => all.findIndex((r) => r.id === ref.id) === i);
  }

  async connection(db: ClusterDatabase) {
    return (await this.of(db.engine)).connection(db);
  }

  async sqlTarget(db: ClusterRef) {
    return (await this.of(db.engine)).sqlTarget(db);
  }

  async startBackup(db: ClusterRef, name: string, method: BackupMethod) {
    return (await this.of(db.engine)).startBackup(db, name, method);
  }

  async listBackups(db: ClusterRef) {
    return (await this.of(db.engine)).listBackups(db);
  }

  async deleteBackup(db: ClusterRef, backup: { name: string; ref: string | null }) {
    return (await this.of(db.engine)).deleteBackup(db, backup);
  }

  async purgeBackups(db: ClusterRef) {
    return (await this.of(db.engine)).purgeBackups(db);
  }

  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map((a) => a.close()));
  }
}
