import { Transform } from 'node:stream';

// Neither Docker nor the kubelet ends an exec'd process when the connection that started it
// goes: it keeps running, and holding what it holds. So every shell command runs under a
// small /bin/sh wrapper that reports its PID first (an OSC sequence terminals ignore, stripped
// here) and then becomes the command; ending a session kills that PID's process group with a
// second exec. Both adapters use it.

/** `ESC ] pier;pid=N BEL`: the wrapper's first output (control characters are the point here). */
// eslint-disable-next-line no-control-regex
const MARKER = /^\x1b\]pier;pid=(\d+)\x07/;
/** The wrapper prints the marker at once; past this many bytes without it, there is none. */
const MARKER_MAX = 64;

/** The argv that runs `command` under the wrapper. */
export function wrapped(command: string[]): string[] {
  return ['/bin/sh', '-c', 'printf "\\033]pier;pid=%s\\007" "$$"; exec "$@"', 'pier-exec', ...command];
}

/**
 * The argv that ends the process group of `pid`: the command and what it started (a shell's
 * foreground job is sent SIGHUP by the kernel when its session leader goes).
 */
export function killCommand(pid: number): string[] {
  return ['/bin/sh', '-c', `kill -KILL -${pid} 2>/dev/null; kill -KILL ${pid} 2>/dev/null; true`];
}

/** Strips the marker from the head of the output and hands over the PID (null when there is none). */
export function markerStripper(onPid: (pid: number | null) => void): Transform {
  let head: Buffer | null = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (head === null) return done(null, chunk);
      head = Buffer.concat([head, chunk]);
      const m = MARKER.exec(head.toString('latin1'));
      if (m) {
        onPid(Number(m[1]));
        const rest = head.subarray(m[0].length);
        head = null;
        return done(null, rest);
      }
      if (head.length < MARKER_MAX) return done();
      onPid(null);
      const all = head;
      head = null;
      done(null, all);
    },
    flush(done) {
      // The process ended before the marker was complete: what came is output.
      onPid(null);
      done(null, head && head.length ? head : undefined);
    },
  });
}

/** The PID once known, or null after `ms` (a process that never printed the marker). */
export function pidWithin(pid: Promise<number | null>, ms = 1000): Promise<number | null> {
  return Promise.race([pid, new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}
