/**
 * One operation at a time per service within this process: a deploy, an env change and a
 * delete of the same service queue behind each other, so each sees the last one's result.
 * (The row lock taken when committing covers a second compute instance's writes, not its
 * cluster calls; compute runs as one instance per cluster.)
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  busy(key: string): boolean {
    return this.tails.has(key);
  }
}
