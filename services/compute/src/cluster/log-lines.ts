// What both log adapters do with what a cluster sends: entries `<RFC 3339 time> <text>\n`
// become lines (Docker splits a line over 16 KiB into entries stamped alike, all but the
// last without the newline), and lines pushed by a stream become batches pulled by the
// collector, the stream pausing while too many wait.
import type { LogLine, LogStream } from '../domain/logs/log-port.ts';
import { normalizeTimestamp } from '../domain/logs/log-time.ts';

/** A line longer than this is cut into lines of this size (a process printing without newlines cannot exhaust memory). */
export const MAX_LINE_BYTES = 256 * 1024;
const NEWLINE = 0x0a;
const SPACE = 0x20;

export interface LineLabels {
  replica: string;
  deploymentId: string | null;
}

/** One stream's entries in, whole lines out. */
export class LineAssembler {
  private parts: Buffer[] = [];
  private size = 0;
  private ts = '';

  constructor(
    private readonly stream: LogStream,
    private readonly labels: LineLabels,
    private readonly emit: (line: LogLine) => void,
  ) {}

  /** One entry, with or without its final newline (an entry without is the start or middle of a long line). */
  entry(chunk: Buffer): void {
    const space = chunk.indexOf(SPACE);
    if (space <= 0) return;
    const ts = normalizeTimestamp(chunk.toString('latin1', 0, space));
    if (ts === null) return;
    const complete = chunk[chunk.length - 1] === NEWLINE;
    const end = complete ? chunk.length - 1 : chunk.length;
    if (this.parts.length === 0 && complete) {
      this.line(ts, chunk.toString('utf8', space + 1, end));
      return;
    }
    if (this.parts.length === 0) this.ts = ts;
    const body = chunk.subarray(space + 1, end);
    this.parts.push(body);
    this.size += body.length;
    if (complete || this.size >= MAX_LINE_BYTES) this.flush();
  }

  /** The stream ended: a line still without its newline is a line too. */
  end(): void {
    if (this.parts.length) this.flush();
  }

  private flush(): void {
    // Joined before decoding, so a character split between two entries stays whole.
    const text = Buffer.concat(this.parts, this.size).toString('utf8');
    this.parts = [];
    this.size = 0;
    this.line(this.ts, text);
  }

  private line(ts: string, message: string): void {
    this.emit({ ts, replica: this.labels.replica, deploymentId: this.labels.deploymentId, stream: this.stream, message });
  }
}

/** Splits a byte stream into newline-terminated entries (Kubernetes sends one text stream). */
export class EntrySplitter {
  private rest: Buffer | null = null;

  constructor(private readonly entry: (chunk: Buffer) => void) {}

  write(chunk: Buffer): void {
    let data = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.rest = null;
    let from = 0;
    for (let nl = data.indexOf(NEWLINE, from); nl !== -1; nl = data.indexOf(NEWLINE, from)) {
      this.entry(data.subarray(from, nl + 1));
      from = nl + 1;
    }
    if (from < data.length) {
      data = data.subarray(from);
      // No newline for too long: hand it on as the start of a long line.
      if (data.length >= MAX_LINE_BYTES) this.entry(data);
      else this.rest = Buffer.from(data);
    }
  }

  end(): void {
    if (this.rest) this.entry(this.rest);
    this.rest = null;
  }
}

/**
 * Docker's multiplexed stream (an 8-byte header per frame: stream type, then the payload
 * length) split back into frames, each handed on whole with its stream, in one pass.
 * dockerode's `modem.demuxStream` copies what is left of its buffer after every frame,
 * which is quadratic in the frames per chunk: measured here, 200,000 one-line frames took
 * it 2.5 s of CPU, a ceiling of about 80,000 lines/s for all of collection.
 */
export class DockerDemuxer {
  private pending: Buffer | null = null;

  constructor(private readonly frame: (stream: LogStream, payload: Buffer) => void) {}

  write(chunk: Buffer): void {
    const data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = null;
    let at = 0;
    while (at + 8 <= data.length) {
      const size = data.readUInt32BE(at + 4);
      if (at + 8 + size > data.length) break;
      const type = data[at]!;
      if (type === 1 || type === 2) this.frame(type === 2 ? 'stderr' : 'stdout', data.subarray(at + 8, at + 8 + size));
      at += 8 + size;
    }
    // A frame cut by the chunk's end waits for the rest.
    if (at < data.length) this.pending = Buffer.from(data.subarray(at));
  }
}

/** A whole multiplexed log (a container's, read without following) as text: stdout and stderr as they came. */
export function framesText(raw: Buffer): string {
  const parts: Buffer[] = [];
  new DockerDemuxer((_stream, payload) => parts.push(payload)).write(raw);
  return Buffer.concat(parts).toString('utf8');
}

/**
 * Lines pushed as a stream reads them, pulled in batches. While `highWater` lines wait,
 * `room` holds back whoever pushes (a stream's write callback, or its pause).
 */
export class LineBatches implements AsyncIterable<LogLine[]> {
  private queue: LogLine[] = [];
  private ended = false;
  private error: unknown;
  private wake?: () => void;
  private readonly waitingForRoom: (() => void)[] = [];

  constructor(private readonly highWater = 5000) {}

  push = (line: LogLine): void => {
    this.queue.push(line);
    if (this.queue.length === 1) this.wake?.();
  };

  get full(): boolean {
    return this.queue.length >= this.highWater;
  }

  /** Calls `go` once fewer than `highWater` lines wait (now, if so already). */
  room(go: () => void): void {
    if (this.full && !this.ended) this.waitingForRoom.push(go);
    else go();
  }

  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = err;
    this.wake?.();
    for (const go of this.waitingForRoom.splice(0)) go();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<LogLine[]> {
    for (;;) {
      if (this.queue.length) {
        const batch = this.queue;
        this.queue = [];
        for (const go of this.waitingForRoom.splice(0)) go();
        yield batch;
        continue;
      }
      if (this.ended) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
