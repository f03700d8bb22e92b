import { CronExpressionParser } from 'cron-parser';

// Cron schedules as Kubernetes CronJobs take them: compute's cron services and the
// databases' backup schedules. Five-field Vixie syntax and these macros, nothing finer;
// the docker adapters accept exactly the same, so a schedule keeps its meaning whichever
// cluster runs it. cron-parser alone would also take a seconds field.
const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

/** Why `expr` is not a schedule we run, or undefined when it is one. */
export function cronScheduleProblem(expr: string): string | undefined {
  const text = expr.trim();
  if (text.startsWith('@')) {
    return MACROS.has(text) ? undefined : `unknown macro ${text}; use one of ${[...MACROS].join(', ')}`;
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return `must have 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  try {
    CronExpressionParser.parse(text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The latest fire time at or before `now`, in UTC. */
export function lastFireTime(expr: string, now: Date): Date {
  const it = CronExpressionParser.parse(expr.trim(), { currentDate: new Date(now.getTime() + 1), tz: 'UTC' });
  return it.prev().toDate();
}

/** The next fire time after `now`, in UTC. */
export function nextFireTime(expr: string, now: Date): Date {
  const it = CronExpressionParser.parse(expr.trim(), { currentDate: now, tz: 'UTC' });
  return it.next().toDate();
}
