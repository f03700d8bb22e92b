/**
 * Runs a pass every `intervalMs`, counted from the end of the previous pass, so two passes
 * never overlap and a slow pass delays the next rather than piling up. A failed pass is
 * reported and the next one still comes: background work retries by itself.
 */
export class Periodic {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    private readonly pass: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Starts the passes; `first`, when given, runs at once before the first interval. */
  start(first?: () => Promise<unknown>): void {
    this.stopped = false;
    if (!first) return this.schedule();
    this.running = this.guard(first);
  }

  /** Stops scheduling and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private guard(fn: () => Promise<unknown>): Promise<void> {
    return fn()
      .then(() => undefined, this.onError)
      .finally(() => {
        this.running = undefined;
        this.schedule();
      });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.guard(this.pass);
    }, this.intervalMs);
    this.timer.unref?.();
  }
}
