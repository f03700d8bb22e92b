import { CliError } from './errors.ts';

/**
 * A dotenv file's KEY=VALUE pairs, as the usual tools read them: blank lines and `#`
 * comments skipped, an optional `export ` prefix, values optionally quoted ('…' as is,
 * "…" with \n \t \" \\ escapes), and an unquoted value's trailing ` # comment` dropped.
 */
export function parseDotenv(text: string, file: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new CliError(`${file}:${i + 1}: not KEY=VALUE`, 'invalid_env_file', 2);
    const [, key, rest] = m as unknown as [string, string, string];
    let value: string;
    if (rest.startsWith('"') && rest.length > 1 && rest.lastIndexOf('"') > 0) {
      value = rest.slice(1, rest.lastIndexOf('"')).replace(/\\([nt"\\])/g, (_, c: string) => ({ n: '\n', t: '\t', '"': '"', '\\': '\\' })[c]!);
    } else if (rest.startsWith("'") && rest.length > 1 && rest.lastIndexOf("'") > 0) {
      value = rest.slice(1, rest.lastIndexOf("'"));
    } else {
      value = rest.replace(/\s+#.*$/, '').trim();
    }
    out[key] = value;
  });
  return out;
}
