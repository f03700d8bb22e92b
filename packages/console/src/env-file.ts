// A pasted .env file as key/value rows: KEY=value lines, `export ` prefixes, # comments,
// blank lines, and single- or double-quoted values (double quotes understand \n, \" and \\).

export interface EnvRow {
  key: string;
  value: string;
}

export function parseEnvFile(text: string): EnvRow[] {
  const rows: EnvRow[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    const key = m[1]!;
    let value = m[2]!;
    if (value.startsWith('"')) {
      const end = findClosingQuote(value);
      value = value.slice(1, end).replace(/\\([n"\\])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    } else if (value.startsWith("'")) {
      const end = value.indexOf("'", 1);
      value = value.slice(1, end === -1 ? undefined : end);
    } else {
      value = value.replace(/\s+#.*$/, '').trim();
    }
    const existing = rows.find((r) => r.key === key);
    if (existing) existing.value = value;
    else rows.push({ key, value });
  }
  return rows;
}

function findClosingQuote(value: string): number {
  for (let i = 1; i < value.length; i++) {
    if (value[i] === '\\') i++;
    else if (value[i] === '"') return i;
  }
  return value.length;
}
