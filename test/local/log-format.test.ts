import { describe, expect, it } from 'vitest';
import { chooseFormat, logLineWriter } from '../../deploy/local/log-format.ts';

const pinoLine = JSON.stringify({
  level: 40,
  time: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
  pid: 1,
  hostname: 'h',
  service: 'compute',
  name: 'compute',
  msg: 'cron scheduler pass failed',
  err: 'Error: connect ENOENT /var/run/docker.sock',
  retryEveryMs: 5000,
});

describe('launcher log lines', () => {
  it('are readable on a terminal: time, service, level, message, then the fields that matter', () => {
    const out = logLineWriter('pretty', false).child('compute', pinoLine, 'stdout');
    expect(out).toBe('03:04:05.678 compute   WARN  cron scheduler pass failed  err="Error: connect ENOENT /var/run/docker.sock" retryEveryMs=5000\n');
  });

  it('are JSON lines in a pipe, exactly as the service wrote them', () => {
    const w = logLineWriter('json', false);
    expect(w.child('compute', pinoLine, 'stdout')).toBe(pinoLine + '\n');
    // What a service prints that is not pino's still becomes one JSON object.
    expect(JSON.parse(w.child('auth', 'TypeError: boom', 'stderr'))).toMatchObject({ service: 'auth', level: 40, msg: 'TypeError: boom' });
    expect(JSON.parse(w.own(30, 'Pier is running', { api: 'http://127.0.0.1:7100/api/v1' }))).toMatchObject({ service: 'pier', msg: 'Pier is running' });
  });

  it('add colours only when asked, and stacks of errors on the lines below', () => {
    const err = JSON.stringify({
      level: 50,
      time: 0,
      service: 'auth',
      msg: 'failed',
      err: { type: 'Error', message: 'x', stack: 'Error: x\n    at f (a.ts:1:1)' },
    });
    const plain = logLineWriter('pretty', false).child('auth', err, 'stdout');
    expect(plain).toContain('ERROR failed  err="x"\n    Error: x\n        at f (a.ts:1:1)\n');
    expect(plain).not.toContain('\x1b[');
    expect(logLineWriter('pretty', true).child('auth', err, 'stdout')).toContain('\x1b[31mERROR');
  });

  it('follow the output: a terminal pretty, anything else JSON, PIER_LOG_FORMAT overriding', () => {
    expect(chooseFormat({}, true)).toBe('pretty');
    expect(chooseFormat({}, false)).toBe('json');
    expect(chooseFormat({ PIER_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(chooseFormat({ PIER_LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
  });
});
