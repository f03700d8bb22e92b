// GET /readyz: whether the service can do its work now. Each dependency is checked at
// once, each bounded by a timeout, and named in the answer with its state.

export type ReadinessChecks = Record<string, () => Promise<unknown>>;

export interface CheckState {
  ok: boolean;
  error?: string;
  /** What a passing check says of the dependency when it returns a string (the cluster's mode). */
  detail?: string;
}

export interface Readiness {
  status: 'ready' | 'not_ready';
  checks: Record<string, CheckState>;
}

export async function checkReadiness(checks: ReadinessChecks, timeoutMs = 3000): Promise<Readiness> {
  const entries = await Promise.all(Object.entries(checks).map(async ([name, check]) => [name, await runCheck(name, check, timeoutMs)] as const));
  const states = Object.fromEntries(entries);
  return { status: entries.every(([, s]) => s.ok) ? 'ready' : 'not_ready', checks: states };
}

async function runCheck(name: string, check: () => Promise<unknown>, timeoutMs: number): Promise<CheckState> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([
      check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} did not answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return typeof value === 'string' ? { ok: true, detail: value } : { ok: true };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: message.slice(0, 300) };
  } finally {
    clearTimeout(timer);
  }
}
