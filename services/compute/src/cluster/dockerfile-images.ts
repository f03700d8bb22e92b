// The images a Dockerfile builds from, read as the Engine's classic builder reads them, so
// docker-builds.ts can check each against what the building workspace may use
// (docker-image-access.ts) before the engine resolves it: the builder takes an image's ID
// prefix as readily as its name, and the engine holds other teams' builds.
//   - parser directives (`# escape=`), line continuations, comments;
//   - FROM [--platform=...] <image> [AS <stage>], its image with the global ARGs' defaults
//     substituted (Pier passes no build arguments), `scratch` and earlier stages excepted;
//   - COPY --from=<image>, where it names no earlier stage (by name or index);
//   - ONBUILD COPY --from is refused: it would run in a later build that does not show it.
import { BuildFailedError } from '../domain/builds/builder-port.ts';

type Args = Map<string, string | undefined>;

/** The logical lines: directives read, continuations joined, comments and blank lines gone. */
function instructions(text: string): { lines: string[]; escape: string } {
  const raw = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let escape = '\\';
  let i = 0;
  // Directives come first, before any instruction, blank line or other comment.
  for (; i < raw.length; i++) {
    const directive = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/.exec(raw[i]!);
    if (!directive) break;
    if (directive[1]!.toLowerCase() === 'escape') {
      if (directive[2] !== '\\' && directive[2] !== '`') throw new BuildFailedError(`Dockerfile: invalid escape directive ${directive[2]}`);
      escape = directive[2];
    }
  }
  const lines: string[] = [];
  let current = '';
  for (; i < raw.length; i++) {
    const line = raw[i]!;
    // A comment or blank line inside a continuation is skipped; the continuation goes on.
    if (/^\s*#/.test(line) || (current && !line.trim())) continue;
    const trimmed = line.replace(/\s+$/, '');
    if (trimmed.endsWith(escape)) {
      current += trimmed.slice(0, -1);
      continue;
    }
    current += line;
    if (current.trim()) lines.push(current.trim());
    current = '';
  }
  if (current.trim()) lines.push(current.trim());
  return { lines, escape };
}

/** Words split on unquoted white space, quotes kept for expand(). */
function words(line: string, escape: string): string[] {
  const out: string[] = [];
  let word = '';
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === escape && quote !== "'" && i + 1 < line.length) {
      word += c + line[++i];
    } else if (quote) {
      if (c === quote) quote = null;
      word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word += c;
    } else if (/\s/.test(c)) {
      if (word) out.push(word);
      word = '';
    } else {
      word += c;
    }
  }
  if (word) out.push(word);
  return out;
}

/** A word with its quotes removed and `$NAME`, `${NAME}`, `${NAME:-word}`, `${NAME:+word}` (and without the colon) substituted. */
function expand(word: string, args: Args, escape: string): string {
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < word.length; i++) {
    const c = word[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else out += c;
    } else if (c === escape && i + 1 < word.length) {
      out += word[++i];
    } else if (c === '"' || (c === "'" && !quote)) {
      quote = quote === c ? null : c;
    } else if (c === '$' && word[i + 1] === '{') {
      const end = word.indexOf('}', i);
      if (end < 0) throw new BuildFailedError(`Dockerfile: missing } in ${word}`);
      const inner = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?$/.exec(word.slice(i + 2, end));
      if (!inner) throw new BuildFailedError(`Dockerfile: unsupported substitution in ${word}`);
      const [, name, op, alt] = inner;
      const value = args.get(name!);
      const set = op?.startsWith(':') ? Boolean(value) : value !== undefined;
      if (op?.endsWith('-')) out += set ? value : expand(alt!, args, escape);
      else if (op?.endsWith('+')) out += set ? expand(alt!, args, escape) : '';
      else out += value ?? '';
      i = end;
    } else if (c === '$' && /[A-Za-z_]/.test(word[i + 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(word.slice(i + 1))![0];
      out += args.get(name) ?? '';
      i += name.length;
    } else {
      out += c;
    }
  }
  return out;
}

/** The images (references as written, variables substituted) a Dockerfile's FROM and COPY --from lines name. */
export function dockerfileImages(text: string): string[] {
  const { lines, escape } = instructions(text);
  const args: Args = new Map();
  const stages: string[] = [];
  const images: string[] = [];
  for (const line of lines) {
    const [keyword = '', ...rest] = words(line, escape);
    const instruction = keyword.toUpperCase();
    if (instruction === 'ARG' && stages.length === 0) {
      // Global ARGs: only their defaults reach FROM here.
      for (const w of rest) {
        const eq = w.indexOf('=');
        args.set(eq < 0 ? w : w.slice(0, eq), eq < 0 ? undefined : expand(w.slice(eq + 1), args, escape));
      }
    } else if (instruction === 'FROM') {
      const [image, as, stage] = rest.filter((w) => !w.startsWith('--')).map((w) => expand(w, args, escape));
      if (!image) throw new BuildFailedError(`Dockerfile: FROM names no image: ${line}`);
      if (image.toLowerCase() !== 'scratch' && !stages.includes(image.toLowerCase())) images.push(image);
      stages.push(as?.toLowerCase() === 'as' && stage ? stage.toLowerCase() : `#${stages.length}`);
    } else if (instruction === 'ONBUILD' && /^copy$/i.test(rest[0] ?? '') && rest.some((w) => /^--from=/i.test(w))) {
      // It would run in a later build from this image, whose Dockerfile does not show it.
      throw new BuildFailedError('Dockerfile: ONBUILD COPY --from is not supported; copy from the image in the build that uses it');
    } else if (instruction === 'COPY') {
      const from = rest.find((w) => w.toLowerCase().startsWith('--from='))?.slice('--from='.length);
      if (from === undefined) continue;
      if (from.includes('$')) throw new BuildFailedError(`Dockerfile: COPY --from=${from}: name the stage or image without a variable`);
      const named = from.toLowerCase();
      const stageIndex = /^\d+$/.test(named) && Number(named) < stages.length;
      if (!stageIndex && !stages.includes(named)) images.push(from);
    }
  }
  return images;
}
