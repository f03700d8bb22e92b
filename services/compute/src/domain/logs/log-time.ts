// Log timestamps. Docker stamps lines with nanoseconds (RFC 3339, nine fraction digits),
// Kubernetes with RFC 3339 whose fraction may be shorter or absent. Lines carry one form,
// UTC with exactly nine fraction digits: fixed width, so string order is time order, and
// no precision is lost where resuming must compare exactly. Answers and the store use
// microseconds (PostgreSQL's precision).

const FIXED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/;
const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;

/** An RFC 3339 timestamp in the lines' form; null when `text` is not one. */
export function normalizeTimestamp(text: string): string | null {
  if (text.length === 30 && FIXED.test(text)) return text;
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, seconds, fraction = '', zone] = m;
  const digits = fraction.padEnd(9, '0');
  if (zone === 'Z') return `${seconds}.${digits}Z`;
  const utc = new Date(`${seconds}${zone}`);
  if (Number.isNaN(utc.getTime())) return null;
  return `${utc.toISOString().slice(0, 19)}.${digits}Z`;
}

/** A Date in the lines' form. */
export function timestampOf(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000000Z`;
}

/** The Date of a line's timestamp (to the millisecond). */
export function dateOf(ts: string): Date {
  return new Date(`${ts.slice(0, 23)}Z`);
}

/** ISO 8601 to the microsecond, as answers show it and PostgreSQL stores it. */
export function microsOf(ts: string): string {
  return `${ts.slice(0, 26)}Z`;
}
