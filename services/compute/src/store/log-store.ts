// The log history in compute's schema (migration 0005_logs): one row per line in a table
// partitioned by day, written in batches (one statement per `chunk` lines, the rows sent as
// one JSON document), read through each day's (service_id, ts, seq) index, and expired by
// dropping whole days. A larger installation puts another LogStore (Loki, say) behind the
// same port.
import { InputError, type Knex, type Page } from '@pier/kit';
import type { HistoryQuery, LogLine, LogStore, ReplicaCursor, StoredLine } from '../domain/logs/log-port.ts';
import { microsOf, timestampOf } from '../domain/logs/log-time.ts';

const DAY_TABLE = /^log_lines_(\d{4})(\d\d)(\d\d)$/;
const CURSOR = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)\|(\d{1,18})$/;
// SQLSTATE 23514 with this message: a line for a day that has no partition (dropped meanwhile).
const NO_PARTITION = /no partition of relation/;

function dayOf(d: Date): string {
  return d.toISOString().slice(0, 10);
}

function tableOf(day: string): string {
  return `log_lines_${day.replace(/-/g, '')}`;
}

/** PostgreSQL text cannot hold U+0000; a line that printed one keeps a visible stand-in. */
function storable(text: string): string {
  return text.includes('\0') ? text.replace(/\0/g, '\uFFFD') : text;
}

function encodeCursor(at: string, seq: number): string {
  return Buffer.from(`${at}|${seq}`).toString('base64url');
}

function decodeCursor(cursor: string | undefined): { at: string; seq: number } | undefined {
  if (cursor === undefined) return undefined;
  const m = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new InputError('cursor: not a cursor returned by this list', 'invalid_cursor', { field: 'cursor' });
  return { at: m[1]!, seq: Number(m[2]) };
}

interface HistoryRow {
  at: string;
  seq: number;
  replica: string;
  deployment_id: string | null;
  stream: LogLine['stream'];
  message: string;
}

export class KnexLogStore implements LogStore {
  /** Days known to have their partition. */
  private readonly days = new Set<string>();
  /** Partition DDL, one statement at a time. */
  private ddl: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Knex,
    private readonly chunk = 5000,
  ) {}

  async append(lines: StoredLine[], cursors: ReplicaCursor[]): Promise<void> {
    const days = [...new Set(lines.map((l) => l.ts.slice(0, 10)))].map((d) => new Date(`${d}T00:00:00Z`));
    await this.ensureDays(days);
    try {
      await this.write(lines, cursors);
    } catch (err) {
      if (!NO_PARTITION.test(String((err as Error).message))) throw err;
      // A day dropped by another pass since we last looked: make it again, once.
      this.days.clear();
      await this.ensureDays(days);
      await this.write(lines, cursors);
    }
  }

  private write(lines: StoredLine[], cursors: ReplicaCursor[]): Promise<void> {
    return this.db.transaction(async (trx) => {
      for (let i = 0; i < lines.length; i += this.chunk) {
        const rows = lines.slice(i, i + this.chunk).map((l) => ({
          service_id: l.serviceId,
          ts: microsOf(l.ts),
          deployment_id: l.deploymentId,
          replica: l.replica,
          stream: l.stream,
          message: storable(l.message),
        }));
        await trx.raw(
          `insert into log_lines (service_id, ts, deployment_id, replica, stream, message)
           select service_id, ts, deployment_id, replica, stream, message
           from json_to_recordset(?::json) as r(service_id uuid, ts timestamptz, deployment_id uuid, replica text, stream text, message text)`,
          [JSON.stringify(rows)],
        );
      }
      if (cursors.length) {
        await trx.raw(
          `insert into log_cursors (key, service_id, ts)
           select key, service_id, ts from json_to_recordset(?::json) as r(key text, service_id uuid, ts text)
           on conflict (key) do update set ts = greatest(log_cursors.ts, excluded.ts), updated_at = now()`,
          [JSON.stringify(cursors.map((c) => ({ key: c.key, service_id: c.serviceId, ts: c.ts })))],
        );
      }
    });
  }

  async cursor(key: string): Promise<string | null> {
    const r = await this.db('log_cursors').where({ key }).first('ts');
    return (r?.ts as string | undefined) ?? null;
  }

  async history(q: HistoryQuery): Promise<Page<LogLine>> {
    const after = decodeCursor(q.cursor);
    if (q.start >= q.end) return { items: [], nextCursor: null };
    const query = this.db('log_lines')
      .where('service_id', q.serviceId)
      .where('ts', '>=', q.start)
      .where('ts', '<', q.end)
      // Not `ts`: an output column of that name would be what ORDER BY sorts on, and the index could not.
      .select(this.db.raw(`to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`), 'seq', 'replica', 'deployment_id', 'stream', 'message')
      .orderBy([
        { column: 'ts', order: 'asc' },
        { column: 'seq', order: 'asc' },
      ])
      .limit(q.limit + 1);
    if (q.replica !== undefined) query.where('replica', q.replica);
    if (q.q !== undefined) query.whereRaw('strpos(message, ?) > 0', [q.q]);
    if (after) query.whereRaw('(ts, seq) > (?::timestamptz, ?)', [after.at, after.seq]);
    const rows = (await query) as HistoryRow[];
    const more = rows.length > q.limit;
    const kept = more ? rows.slice(0, q.limit) : rows;
    const last = kept[kept.length - 1];
    return {
      items: kept.map((r) => ({
        ts: `${r.at.slice(0, 26)}000Z`,
        replica: r.replica,
        deploymentId: r.deployment_id,
        stream: r.stream,
        message: r.message,
      })),
      nextCursor: more && last ? encodeCursor(last.at, last.seq) : null,
    };
  }

  ensureDays(days: Date[]): Promise<void> {
    const missing = [...new Set(days.map(dayOf))].filter((d) => !this.days.has(d));
    if (missing.length === 0) return Promise.resolve();
    const run = this.ddl.catch(() => undefined).then(() => this.createDays(missing));
    this.ddl = run;
    return run;
  }

  private async createDays(days: string[]): Promise<void> {
    for (const day of days) {
      if (this.days.has(day)) continue;
      const next = dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000));
      try {
        // Names and bounds are made here from dates, never from input.
        await this.db.raw(
          `create table if not exists ${tableOf(day)} partition of log_lines for values from ('${day} 00:00:00+00') to ('${next} 00:00:00+00')`,
        );
      } catch (err) {
        // Another process made it at the same moment.
        const code = (err as { code?: string }).code;
        if (code !== '42P07' && code !== '23505') throw err;
      }
      this.days.add(day);
    }
  }

  async dropBefore(cutoff: Date): Promise<string[]> {
    const dropped: string[] = [];
    await (this.ddl = this.ddl
      .catch(() => undefined)
      .then(async () => {
        const { rows } = await this.db.raw<{ rows: { name: string }[] }>(
          `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'log_lines'::regclass`,
        );
        for (const { name } of rows) {
          const m = DAY_TABLE.exec(name);
          if (!m) continue;
          const day = `${m[1]}-${m[2]}-${m[3]}`;
          if (Date.parse(`${day}T00:00:00Z`) + 86_400_000 > cutoff.getTime()) continue;
          await this.db.raw(`drop table if exists ${name}`);
          this.days.delete(day);
          dropped.push(day);
        }
        // A replica silent since before the window: read again from its start, all its lines would be dropped anyway.
        await this.db('log_cursors').where('ts', '<', timestampOf(cutoff)).delete();
      }));
    return dropped.sort();
  }
}
