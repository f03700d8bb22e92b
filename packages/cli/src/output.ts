// Everything the CLI prints. For people: aligned tables and `key  value` blocks on stdout.
// For scripts (`--json`): the API's objects exactly as they came, and nothing else on
// stdout. Progress and errors go to stderr in both cases.
import { errorBodyOf } from './errors.ts';

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** One cell: nothing as '-', lists joined, timestamps to the second. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(cell).join(',') : '-';
  if (typeof v === 'string' && ISO.test(v)) return v.replace(/\.\d+Z$/, 'Z');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    private readonly stderr: NodeJS.WritableStream = process.stderr,
  ) {}

  /** `value` as JSON for scripts; for people, whatever `human` prints. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.stdout.write(JSON.stringify(value, null, 2) + '\n');
    else human();
  }

  /** A line for people (nothing in --json mode, where stdout is JSON only). */
  line(text = ''): void {
    if (!this.json) this.stdout.write(text + '\n');
  }

  /** Progress and notes: stderr, so they never mix with what a script reads. */
  note(text: string): void {
    this.stderr.write(text + '\n');
  }

  table<T>(rows: T[], columns: Column<T>[], empty = 'nothing here yet'): void {
    if (!rows.length) return this.line(empty);
    const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
    const render = (values: string[]) =>
      values
        .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd();
    this.line(render(columns.map((c) => c.header)));
    for (const row of cells) this.line(render(row));
  }

  /** `label  value` lines, labels aligned. */
  fields(pairs: [string, unknown][]): void {
    const width = Math.max(...pairs.map(([k]) => k.length));
    for (const [k, v] of pairs) this.line(`${k.padEnd(width)}  ${cell(v)}`);
  }

  /** The error on stderr: `pier: <message> (<code>)`, or its JSON body with --json. */
  error(err: unknown): void {
    const body = errorBodyOf(err);
    if (this.json) this.stderr.write(JSON.stringify(body) + '\n');
    else this.stderr.write(`pier: ${body.error} (${body.code}${body.field ? `, field ${body.field}` : ''})\n`);
  }
}
