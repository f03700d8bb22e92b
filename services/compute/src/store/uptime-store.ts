import { writeEvent, type Knex, type PierEvent } from '@pier/kit';
import type { Service } from '../domain/records.ts';
import type {
  CheckCounts,
  DueCheck,
  HourCounts,
  MonitorSettings,
  MonitorState,
  UptimeIncident,
  UptimeMonitor,
  UptimeStore,
} from '../domain/uptime/uptime-store-port.ts';

type Db = Knex | Knex.Transaction;

const monitorRow = (r: Record<string, unknown>): UptimeMonitor => r as unknown as UptimeMonitor;
const incidentRow = (r: Record<string, unknown>): UptimeIncident => r as unknown as UptimeIncident;

/** Services whose monitor has nothing left to check: gone, going, or no longer serving HTTP. */
const ENDED = `(s.deleted_at is not null or s.status = 'deleting' or s.service_type <> 'web' or s.port is null)`;

export class KnexUptimeStore implements UptimeStore {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: (tx: UptimeStore) => Promise<T>): Promise<T> {
    return (this.db as Knex).transaction((trx) => fn(new KnexUptimeStore(trx)));
  }

  writeEvent(event: PierEvent): Promise<void> {
    return writeEvent(this.db, event);
  }

  async findMonitor(serviceId: string): Promise<UptimeMonitor | undefined> {
    const r = await this.db('uptime_monitors').where({ service_id: serviceId }).first();
    return r ? monitorRow(r) : undefined;
  }

  async lockMonitor(serviceId: string): Promise<UptimeMonitor | undefined> {
    const r = await this.db('uptime_monitors').where({ service_id: serviceId }).forUpdate().first();
    return r ? monitorRow(r) : undefined;
  }

  async saveMonitor(serviceId: string, settings: MonitorSettings, nextCheckAt: Date): Promise<{ monitor: UptimeMonitor; created: boolean }> {
    // xmax is 0 on a row this statement inserted, and set on one it updated.
    const { rows } = await this.db.raw(
      `insert into uptime_monitors (service_id, path, interval_seconds, timeout_ms, expected_min, expected_max, next_check_at)
       values (:service_id, :path, :interval_seconds, :timeout_ms, :expected_min, :expected_max, :next_check_at)
       on conflict (service_id) do update set
         path = excluded.path, interval_seconds = excluded.interval_seconds, timeout_ms = excluded.timeout_ms,
         expected_min = excluded.expected_min, expected_max = excluded.expected_max, next_check_at = excluded.next_check_at,
         generation = uptime_monitors.generation + 1, updated_at = now()
       returning *, (xmax = 0) as created`,
      { service_id: serviceId, ...settings, next_check_at: nextCheckAt },
    );
    const { created, ...monitor } = rows[0] as Record<string, unknown>;
    return { monitor: monitorRow(monitor), created: created === true };
  }

  async deleteMonitor(serviceId: string): Promise<boolean> {
    return (await this.db('uptime_monitors').where({ service_id: serviceId }).delete()) > 0;
  }

  async updateState(serviceId: string, state: MonitorState): Promise<void> {
    await this.db('uptime_monitors')
      .where({ service_id: serviceId })
      .update({ ...state, updated_at: this.db.fn.now() });
  }

  async countCheck(serviceId: string, at: Date, ok: boolean): Promise<void> {
    await this.db.raw(
      `insert into uptime_counts (service_id, hour, checks, ok) values (?, date_trunc('hour', cast(? as timestamptz), 'UTC'), 1, ?)
       on conflict (service_id, hour) do update set checks = uptime_counts.checks + 1, ok = uptime_counts.ok + excluded.ok`,
      [serviceId, at, ok ? 1 : 0],
    );
  }

  async checkCounts(serviceId: string, since: Date): Promise<CheckCounts> {
    const [r] = await this.db('uptime_counts')
      .where({ service_id: serviceId })
      .where('hour', '>=', since)
      .select(this.db.raw('coalesce(sum(checks), 0)::int as checks, coalesce(sum(ok), 0)::int as ok'));
    return { checks: Number(r?.checks ?? 0), ok: Number(r?.ok ?? 0) };
  }

  async hourlyCounts(serviceId: string, since: Date): Promise<HourCounts[]> {
    const rows = (await this.db('uptime_counts')
      .where({ service_id: serviceId })
      .where('hour', '>=', since)
      .orderBy('hour')
      .select('hour', 'checks', 'ok')) as { hour: Date; checks: number; ok: number }[];
    return rows.map((r) => ({ hour: new Date(r.hour), checks: Number(r.checks), ok: Number(r.ok) }));
  }

  async openIncident(serviceId: string, startedAt: Date, reason: string, keep: number): Promise<UptimeIncident> {
    const [r] = await this.db('uptime_incidents').insert({ service_id: serviceId, started_at: startedAt, reason }).returning('*');
    await this.db.raw(
      `delete from uptime_incidents where service_id = ? and id not in
         (select id from uptime_incidents where service_id = ? order by started_at desc, id desc limit ?)`,
      [serviceId, serviceId, keep],
    );
    return incidentRow(r);
  }

  async closeIncident(serviceId: string, endedAt: Date): Promise<UptimeIncident | undefined> {
    const [r] = await this.db('uptime_incidents').where({ service_id: serviceId }).whereNull('ended_at').update({ ended_at: endedAt }).returning('*');
    return r ? incidentRow(r) : undefined;
  }

  async incidents(serviceId: string, limit: number): Promise<UptimeIncident[]> {
    const rows = await this.db('uptime_incidents')
      .where({ service_id: serviceId })
      .orderBy([
        { column: 'started_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit);
    return rows.map(incidentRow);
  }

  async claimDue(now: Date, limit: number): Promise<DueCheck[]> {
    if (limit <= 0) return [];
    // One statement: the rows are locked (others skipped), moved on and returned together.
    // A monitor more than an interval late (compute was down) starts over from now rather
    // than running every check it missed.
    const { rows } = await this.db.raw(
      `with due as (
         select m.service_id from uptime_monitors m join services s on s.id = m.service_id
         where m.next_check_at <= :now and not ${ENDED}
         order by m.next_check_at
         limit :limit
         for update of m skip locked
       )
       update uptime_monitors m set next_check_at = case
           when m.next_check_at + make_interval(secs => m.interval_seconds) > :now then m.next_check_at + make_interval(secs => m.interval_seconds)
           else cast(:now as timestamptz) + make_interval(secs => m.interval_seconds)
         end
       from due where m.service_id = due.service_id
       returning m.*`,
      { now, limit },
    );
    if (rows.length === 0) return [];
    const services = await this.db('services').whereIn(
      'id',
      rows.map((r: UptimeMonitor) => r.service_id),
    );
    const byId = new Map<string, Service>(services.map((s: Service) => [s.id, s]));
    return (rows as UptimeMonitor[]).flatMap((monitor) => {
      const service = byId.get(monitor.service_id);
      return service ? [{ monitor: monitorRow(monitor as unknown as Record<string, unknown>), service }] : [];
    });
  }

  async endOrphans(): Promise<number> {
    const { rowCount } = await this.db.raw(`delete from uptime_monitors m using services s where s.id = m.service_id and ${ENDED}`);
    return rowCount ?? 0;
  }

  async dropCountsBefore(cutoff: Date, batch: number): Promise<number> {
    const { rowCount } = await this.db.raw(`delete from uptime_counts where ctid = any(array(select ctid from uptime_counts where hour < ? limit ?))`, [
      cutoff,
      batch,
    ]);
    return rowCount ?? 0;
  }
}
