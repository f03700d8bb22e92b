// Following a service's logs again after its stream ended — the API sends a `reconnect`
// event when an instance drains — without losing or repeating a line: the next stream
// starts at the newest timestamp seen (`since`, which the API counts inclusively), and the
// lines already shown at that instant are remembered so they are not shown twice. The CLI
// (`pier services logs --follow`) and the console both follow this way.

/** What tells one log line from another: the fields of the API's log line. */
export interface LogLineIdentity {
  timestamp: string;
  replica: string;
  stream: string;
  message: string;
}

export class LogResume {
  /** The newest timestamp seen: ISO 8601 in UTC to the microsecond, fixed width, so compared as text. */
  private newest = '';
  private atNewest = new Set<string>();

  /** The `since` of the next follow: undefined before any line (the API's recent lines then). */
  get since(): string | undefined {
    return this.newest || undefined;
  }

  /** Whether `line` is new to this follow; it is remembered, so the same line is not new again. */
  fresh(line: LogLineIdentity): boolean {
    const key = `${line.replica}\n${line.stream}\n${line.message}`;
    if (line.timestamp < this.newest || (line.timestamp === this.newest && this.atNewest.has(key))) return false;
    if (line.timestamp > this.newest) {
      this.newest = line.timestamp;
      this.atNewest = new Set();
    }
    this.atNewest.add(key);
    return true;
  }
}
