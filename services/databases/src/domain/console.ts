// The SQL console, schema inspector and slow-query log: SQL spoken to a running database
// as the control plane's own role (see sql/), never as a superuser.
import type { QueryResult, SlowQuery, TableSchema } from './sql-port.ts';
import type { DatabaseRecord } from './database.ts';
import { requireRunning, type DatabasesContext, type Scope } from './context.ts';
import { getDatabase } from './status-refresh.ts';

async function running(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  return requireRunning(await getDatabase(ctx, scope, id));
}

export async function runQuery(ctx: DatabasesContext, scope: Scope, id: string, sql: string): Promise<QueryResult> {
  const db = await running(ctx, scope, id);
  return ctx.sql[db.engine].query(await ctx.cluster.sqlTarget(db), sql, ctx.console);
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
}
