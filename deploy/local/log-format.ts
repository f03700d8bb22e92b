/**
 * What the launcher prints of its children's log lines. A terminal gets one readable line
 * each (time, service, level, message, the fields that matter); a pipe or a file gets JSON
 * lines, one object each, so `./pier up | jq` and log shippers work. PIER_LOG_FORMAT
 * (`pretty` or `json`) overrides the choice.
 */

export type LogFormat = 'pretty' | 'json';

export function chooseFormat(env: NodeJS.ProcessEnv, isTty: boolean): LogFormat {
  if (env.PIER_LOG_FORMAT === 'pretty' || env.PIER_LOG_FORMAT === 'json') return env.PIER_LOG_FORMAT;
  return isTty ? 'pretty' : 'json';
}

const LEVELS: Record<number, { name: string; colour: string }> = {
  10: { name: 'TRACE', colour: '\x1b[90m' },
  20: { name: 'DEBUG', colour: '\x1b[90m' },
  30: { name: 'INFO ', colour: '\x1b[32m' },
  40: { name: 'WARN ', colour: '\x1b[33m' },
  50: { name: 'ERROR', colour: '\x1b[31m' },
  60: { name: 'FATAL', colour: '\x1b[35m' },
};
const DIM = '\x1b[2m';
const BOLD = '\x1b[1m';
const RESET = '\x1b[0m';

/** pino's own bookkeeping: said by the columns already, or noise on one machine. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (v && typeof v === 'object' && 'message' in v && typeof (v as { message: unknown }).message === 'string') {
    return JSON.stringify((v as { message: string }).message);
  }
  return JSON.stringify(v);
}

function clock(time: unknown): string {
  const d = typeof time === 'number' ? new Date(time) : new Date();
  return d.toISOString().slice(11, 23);
}

export interface LogLineWriter {
  /** One line a child printed (pino JSON, or anything else it wrote). */
  child(service: string, line: string, stream: 'stdout' | 'stderr'): string;
  /** One line of the launcher's own. */
  own(level: 30 | 40 | 50, msg: string, fields?: Record<string, unknown>): string;
}

/** Formats lines for `format`; `colour` only matters to `pretty`. Returned lines end in '\n'. */
export function logLineWriter(format: LogFormat, colour: boolean): LogLineWriter {
  const paint = (code: string, text: string) => (colour ? code + text + RESET : text);

  const pretty = (service: string, rec: Record<string, unknown>): string => {
    const level = LEVELS[rec.level as number] ?? LEVELS[30]!;
    const fields = Object.entries(rec)
      .filter(([k]) => !HIDDEN.has(k))
      .map(([k, v]) => `${paint(DIM, k + '=')}${value(v)}`)
      .join(' ');
    const head = `${paint(DIM, clock(rec.time))} ${paint(BOLD, service.padEnd(9))} ${paint(level.colour, level.name)} ${String(rec.msg ?? '')}`;
    let out = fields ? `${head}  ${fields}` : head;
    const stack = (rec.err as { stack?: unknown } | undefined)?.stack;
    if (typeof stack === 'string' && (rec.level as number) >= 50) out += '\n' + paint(DIM, stack.replace(/^/gm, '    '));
    return out + '\n';
  };

  const render = (service: string, rec: Record<string, unknown>): string =>
    format === 'json' ? JSON.stringify({ ...rec, service: rec.service ?? service }) + '\n' : pretty(service, rec);

  return {
    child(service, line, stream) {
      let rec: unknown;
      try {
        rec = line.startsWith('{') ? JSON.parse(line) : undefined;
      } catch {
        rec = undefined;
      }
      if (rec && typeof rec === 'object' && 'msg' in rec) {
        // Already JSON: a pipe gets it exactly as the service wrote it.
        return format === 'json' ? line + '\n' : pretty(service, rec as Record<string, unknown>);
      }
      // A line that is not pino's (a crash's stack trace, a tool's output) keeps its words.
      return render(service, { level: stream === 'stderr' ? 40 : 30, time: Date.now(), service, msg: line });
    },
    own(level, msg, fields = {}) {
      return render('pier', { level, time: Date.now(), service: 'pier', msg, ...fields });
    },
  };
}
