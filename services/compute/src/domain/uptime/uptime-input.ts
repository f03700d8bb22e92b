// The settings of an uptime monitor: the body POST uptime takes, its defaults and rules
// (each violation a 400 naming the field).
import { z } from 'zod';
import { InputError } from '@pier/kit';
import type { MonitorSettings } from './uptime-store-port.ts';

export const DEFAULT_PATH = '/';
export const PATH_MAX = 2000;
export const DEFAULT_INTERVAL_SECONDS = 60;
export const MAX_INTERVAL_SECONDS = 3600;
export const DEFAULT_TIMEOUT_SECONDS = 10;
export const MIN_TIMEOUT_SECONDS = 0.1;
export const MAX_TIMEOUT_SECONDS = 60;
export const DEFAULT_EXPECTED_STATUS = { min: 200, max: 399 } as const;

export const enableUptimeBody = z.strictObject({
  path: z
    .string()
    .optional()
    .describe(`The path checked on the service's public URL (default /): starts with /, printable ASCII, no //, @, \\ or #, at most ${PATH_MAX} characters`),
  interval_seconds: z
    .int()
    .optional()
    .describe(`Seconds between checks: ${DEFAULT_INTERVAL_SECONDS} by default, from 30 (unless the operator lowered it) to ${MAX_INTERVAL_SECONDS}`),
  timeout_seconds: z
    .number()
    .optional()
    .describe(
      `How long a check waits for the response's headers, in seconds (to the millisecond): ${MIN_TIMEOUT_SECONDS}-${MAX_TIMEOUT_SECONDS}, shorter than the interval; default ${DEFAULT_TIMEOUT_SECONDS} (half the interval when that is shorter)`,
    ),
  expected_status: z
    .strictObject({ min: z.int(), max: z.int() })
    .optional()
    .describe('The status codes that count as up, both ends included (default {"min": 200, "max": 399}); a redirect is never followed'),
});
export type EnableUptimeInput = z.infer<typeof enableUptimeBody>;

function invalid(field: string, message: string): InputError {
  return new InputError(`${field}: ${message}`, 'invalid_request', { field });
}

/**
 * The path goes after the service's own origin, so nothing in it may change where the
 * request goes or what it means: `//host` and `user@host` re-aim a URL, `\` reads as `/` in
 * some servers, CR/LF would split the request line, `#` is never sent.
 */
export function checkPath(path: string): string {
  if (path.length > PATH_MAX) throw invalid('path', `at most ${PATH_MAX} characters`);
  if (!path.startsWith('/')) throw invalid('path', 'must start with /');
  if (/[\r\n]/.test(path)) throw invalid('path', 'must not contain CR or LF');
  if (path.includes('//')) throw invalid('path', 'must not contain //');
  if (path.includes('@')) throw invalid('path', 'must not contain @');
  if (/[\\#]/.test(path)) throw invalid('path', 'must not contain \\ or #');
  if (!/^[\x21-\x7e]*$/.test(path)) throw invalid('path', 'printable ASCII without spaces (percent-encode anything else)');
  return path;
}

/** The settings a POST asks for, defaults applied; `minIntervalSeconds` is the operator's floor. */
export function monitorSettings(input: EnableUptimeInput, minIntervalSeconds: number): MonitorSettings {
  const path = checkPath(input.path ?? DEFAULT_PATH);

  const interval = input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS;
  if (interval < minIntervalSeconds || interval > MAX_INTERVAL_SECONDS)
    throw invalid('interval_seconds', `must be from ${minIntervalSeconds} to ${MAX_INTERVAL_SECONDS} seconds`);

  const timeout = input.timeout_seconds ?? Math.min(DEFAULT_TIMEOUT_SECONDS, interval / 2);
  const timeoutMs = Math.round(timeout * 1000);
  if (Math.abs(timeout * 1000 - timeoutMs) > 1e-6) throw invalid('timeout_seconds', 'at most three decimals (milliseconds)');
  if (timeout < MIN_TIMEOUT_SECONDS || timeout > MAX_TIMEOUT_SECONDS)
    throw invalid('timeout_seconds', `must be from ${MIN_TIMEOUT_SECONDS} to ${MAX_TIMEOUT_SECONDS} seconds`);
  // A check ends before the next one of the same monitor is due, so results arrive in order.
  if (timeout >= interval) throw invalid('timeout_seconds', `must be shorter than the interval (${interval} s)`);

  const expected = input.expected_status ?? DEFAULT_EXPECTED_STATUS;
  if (expected.min < 100 || expected.max > 599 || expected.min > expected.max)
    throw invalid('expected_status', 'min and max must be status codes (100-599) with min <= max');

  return { path, interval_seconds: interval, timeout_ms: timeoutMs, expected_min: expected.min, expected_max: expected.max };
}
