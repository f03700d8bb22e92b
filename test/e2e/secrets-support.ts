// Helpers for the secrets end-to-end tests.

export interface CapturedOutput {
  readonly text: string;
  restore(): void;
}

/**
 * Keeps everything written to this process's stdout and stderr — where every in-process
 * service's pino logger writes — so a test can search all log output. Nothing is passed
 * on: debug-level logs of five services would drown the test report.
 */
export function captureOutput(): CapturedOutput {
  const chunks: string[] = [];
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((s) => s.write.bind(s));
  for (const s of streams) {
    s.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      cb?.();
      return true;
    }) as typeof s.write;
  }
  return {
    get text() {
      return chunks.join('');
    },
    restore() {
      streams.forEach((s, i) => (s.write = originals[i] as typeof s.write));
    },
  };
}
