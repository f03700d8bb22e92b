// The SQL console, schema inspector and slow-query log: SQL spoken to a running database
// as the control plane's own role (see sql/), never as a superuser.
import { InputError, type PierEvent } from '@pier/kit';
import { events } from './events.ts';
import type { QueryResult, SlowQuery, TableSchema } from './sql-port.ts';
import type { DatabaseRecord } from './database.ts';
import { requireRunning, type DatabasesContext, type Scope } from './context.ts';
import { getDatabase } from './status-refresh.ts';

async function running(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  return requireRunning(await getDatabase(ctx, scope, id));
}

export async function runQuery(ctx: DatabasesContext, scope: Scope, id: string, sql: string): Promise<QueryResult> {
  const db = await running(ctx, scope, id);
  try {
    const result = await ctx.sql[db.engine].query(await ctx.cluster.sqlTarget(db), sql, ctx.console);
    await audit(ctx, events.queryRun(db, { command: result.command, row_count: result.row_count, sqlstate: null }));
    return result;
  } catch (err) {
    // The engine's refusal is the caller's answer; the attempt is audited all the same.
    if (err instanceof InputError)
      await audit(ctx, events.queryRun(db, { command: null, row_count: null, sqlstate: String(err.details?.sqlstate ?? err.code) }));
    throw err;
  }
}

export async function inspectSchema(ctx: DatabasesContext, scope: Scope, id: string): Promise<TableSchema[]> {
  const db = await running(ctx, scope, id);
  return ctx.sql[db.engine].schema(await ctx.cluster.sqlTarget(db));
}

export async function slowQueries(ctx: DatabasesContext, scope: Scope, id: string, limit: number): Promise<SlowQuery[]> {
  const db = await running(ctx, scope, id);
  return ctx.sql[db.engine].slowQueries(await ctx.cluster.sqlTarget(db), limit);
}

export async function resetSlowQueries(ctx: DatabasesContext, scope: Scope, id: string): Promise<void> {
  const db = await running(ctx, scope, id);
  await ctx.sql[db.engine].resetSlowQueries(await ctx.cluster.sqlTarget(db));
  await audit(ctx, events.slowQueriesReset(db));
}

async function audit(ctx: DatabasesContext, event: PierEvent): Promise<void> {
  await ctx.store.transaction((tx) => tx.event(event));
  ctx.eventsWritten();
}
