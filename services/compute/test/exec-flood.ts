// What the exec backpressure tests share: a flood of a shell's stdin, sent as fast as the
// socket takes it (the client's own buffer bounded, so what grows is the server's), and the
// resident memory of a process tree read from /proc.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ShellClient } from '@pier/testing';

export const MiB = 1024 * 1024;

/** Resident memory (VmRSS) of `pid` and every process below it, in bytes. */
export async function treeRss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  let total = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  for (const child of children.split(/\s+/).filter(Boolean)) total += await treeRss(Number(child));
  return total;
}

/**
 * Sends up to `total` bytes of stdin in binary frames of `frame` bytes, keeping at most
 * `clientBuffer` unsent on the client. Stops early once the socket has taken nothing for
 * `stallMs` (the server stopped reading: backpressure) or closed. Returns what it sent.
 */
export async function floodStdin(s: ShellClient, total: number, opts: { frame?: number; clientBuffer?: number; stallMs?: number } = {}): Promise<number> {
  const { frame = 256 * 1024, clientBuffer = 8 * MiB, stallMs = 3000 } = opts;
  const chunk = Buffer.alloc(frame, 'x');
  let sent = 0;
  let buffered = s.ws.bufferedAmount;
  let progressAt = Date.now();
  while (sent < total && s.ws.readyState === s.ws.OPEN) {
    if (s.ws.bufferedAmount < clientBuffer) {
      s.ws.send(chunk, { binary: true });
      sent += chunk.length;
      progressAt = Date.now();
      continue;
    }
    if (s.ws.bufferedAmount < buffered) progressAt = Date.now();
    buffered = s.ws.bufferedAmount;
    if (Date.now() - progressAt > stallMs) break;
    await sleep(5);
  }
  return sent;
}
