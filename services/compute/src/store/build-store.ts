import { keysetPage, mapPage, writeEvent, type Knex, type Page, type PageRequest, type PierEvent } from '@pier/kit';
import type { Build, BuildLogChunk, BuildPatch, BuildStatus, BuildStore, NewBuild } from '../domain/builds/build-store-port.ts';
import type { Deployment } from '../domain/records.ts';

type Db = Knex | Knex.Transaction;

const buildRow = (r: Record<string, unknown>): Build => r as unknown as Build;

export class KnexBuildStore implements BuildStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: BuildStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexBuildStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async insertBuild(row: NewBuild): Promise<Build> {
    const [r] = await this.db('builds')
      .insert({ ...row, status: 'queued' })
      .returning('*');
    return buildRow(r);
  }

  async findBuild(serviceId: string, id: string): Promise<Build | undefined> {
    const r = await this.db('builds').where({ id, service_id: serviceId }).first();
    return r ? buildRow(r) : undefined;
  }

  async buildById(id: string): Promise<Build | undefined> {
    const r = await this.db('builds').where({ id }).first();
    return r ? buildRow(r) : undefined;
  }

  async lockBuild(id: string): Promise<Build | undefined> {
    const r = await this.db('builds').where({ id }).forUpdate().first();
    return r ? buildRow(r) : undefined;
  }

  async listBuilds(serviceId: string, page: PageRequest): Promise<Page<Build>> {
    const q = this.db('builds').where({ service_id: serviceId });
    return mapPage(await keysetPage<Record<string, unknown>>(q, page, { order: 'desc' }), buildRow);
  }

  async updateBuild(id: string, patch: BuildPatch): Promise<Build> {
    const [r] = await this.db('builds')
      .where({ id })
      .update({ ...patch, updated_at: this.db.fn.now() })
      .returning('*');
    return buildRow(r);
  }

  async queuedBuilds(limit: number): Promise<Build[]> {
    const rows = await this.db('builds')
      .where({ status: 'queued' })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(limit);
    return rows.map(buildRow);
  }

  async runningCounts(): Promise<Map<string, number>> {
    const rows = await this.db('builds')
      .where({ status: 'running' })
      .groupBy('workspace_id')
      .select('workspace_id')
      .count<{ workspace_id: string; count: string }[]>('* as count');
    return new Map(rows.map((r) => [r.workspace_id, Number(r.count)]));
  }

  async buildsInStatus(status: BuildStatus): Promise<Build[]> {
    const rows = await this.db('builds').where({ status }).orderBy('created_at');
    return rows.map(buildRow);
  }

  async activeBuildIds(): Promise<Set<string>> {
    const rows = await this.db('builds').whereIn('status', ['queued', 'running']).select('id');
    return new Set(rows.map((r: { id: string }) => r.id));
  }

  async appendLog(buildId: string, chunks: BuildLogChunk[], bytes: number): Promise<void> {
    if (chunks.length === 0) return;
    await (this.db as Knex).transaction(async (trx) => {
      await trx('build_logs').insert(chunks.map((c) => ({ build_id: buildId, seq: c.seq, text: c.text })));
      await trx('builds').where({ id: buildId }).increment('log_bytes', bytes);
    });
  }

  async lastLogSeq(buildId: string): Promise<number> {
    const r = await this.db('build_logs').where({ build_id: buildId }).max<{ max: number | null }[]>('seq as max');
    return Number(r[0]?.max ?? 0);
  }

  async readLog(buildId: string, afterSeq: number, limit = 10_000): Promise<BuildLogChunk[]> {
    return this.db('build_logs').where({ build_id: buildId }).where('seq', '>', afterSeq).orderBy('seq').limit(limit).select('seq', 'text');
  }

  async deploymentOfImage(serviceId: string, image: string): Promise<Deployment | undefined> {
    const r = await this.db('deployments').where({ service_id: serviceId, image }).orderBy('created_at', 'desc').first();
    return r ? (r as Deployment) : undefined;
  }

  async putSourcePart(buildId: string, seq: number, part: Uint8Array): Promise<void> {
    await this.db('build_sources').insert({ build_id: buildId, seq, part: Buffer.from(part.buffer, part.byteOffset, part.byteLength) });
  }

  /** One piece per query: an archive of 100 MiB never sits in memory whole. */
  async *sourceParts(buildId: string): AsyncIterable<Uint8Array> {
    for (let seq = 0; ; seq++) {
      const r = await this.db('build_sources').where({ build_id: buildId, seq }).first('part');
      if (!r) return;
      yield r.part as Buffer;
    }
  }

  async deleteSource(buildId: string): Promise<void> {
    await this.db('build_sources').where({ build_id: buildId }).delete();
  }

  async staleSources(before: Date): Promise<string[]> {
    const rows = await this.db('build_sources').groupBy('build_id').havingRaw('max(created_at) < ?', [before]).select('build_id');
    return rows.map((r: { build_id: string }) => r.build_id);
  }
}
