// A build's output on its way to the database: gathered for a moment and written in chunks
// (one insert per half second, not per line), up to the configured size, after which one note
// says the rest was dropped. Readers (GET logs, follow) see what was flushed.
import type { Logger } from '@pier/kit';
import type { BuildStore } from './build-store-port.ts';

const FLUSH_MS = 500;
const FLUSH_BYTES = 64 * 1024;

export class BuildLogWriter {
  private pending: string[] = [];
  private pendingBytes = 0;
  private truncated = false;
  private timer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: BuildStore,
    private readonly buildId: string,
    private seq: number,
    /** Bytes already kept (a build followed again after a restart). */
    private kept: number,
    private readonly limit: number,
    private readonly log: Logger,
  ) {}

  get bytes(): number {
    return this.kept + this.pendingBytes;
  }

  write(text: string): void {
    if (this.truncated || !text) return;
    let chunk = text;
    const room = this.limit - this.bytes;
    if (Buffer.byteLength(chunk) > room) {
      chunk = `${Buffer.from(chunk).subarray(0, Math.max(0, room)).toString('utf8')}\n[pier: the log is over its limit of ${this.limit} bytes; the rest is not kept]\n`;
      this.truncated = true;
    }
    this.pending.push(chunk);
    this.pendingBytes += Buffer.byteLength(chunk);
    if (this.pendingBytes >= FLUSH_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is pending; resolves once everything written so far is stored. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length) {
      const text = this.pending.join('');
      const bytes = this.pendingBytes;
      this.pending = [];
      this.pendingBytes = 0;
      this.kept += bytes;
      const seq = ++this.seq;
      this.chain = this.chain
        .then(() => this.store.appendLog(this.buildId, [{ seq, text }], bytes))
        .catch((err: unknown) => this.log.warn({ err: String(err), build: this.buildId }, 'a chunk of build log could not be stored'));
    }
    return this.chain;
  }
}
