/**
 * One operation at a time per resource within this process: a deploy, an env change and a
 * delete of the same service (or a resize and an allowlist change of the same database)
 * queue behind each other, so each sees the last one's result and the cluster is never
 * asked for two states of one resource at once. A row lock would hold a pooled connection
 * for the whole cluster call; this holds nothing but a promise. (A second instance of the
 * service is not covered: compute and databases run one instance per cluster.)
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
