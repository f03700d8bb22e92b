import { pino, type Logger } from 'pino';

export type { Logger };

// Anything that can carry a credential is removed before a line is written: tokens must
// never reach logs, not even by accident in an error object.
const redact = {
  paths: [
    'req.headers.authorization',
    'req.headers["x-pier-identity"]',
    'req.headers.cookie',
    'headers.authorization',
    'authorization',
    'token',
    'key',
    'password',
    'values',
    '*.token',
    '*.password',
    '*.key',
    '*.values',
  ],
  censor: '[redacted]',
};

export function createLogger(service: string, level = 'info', destination?: NodeJS.WritableStream): Logger {
  return pino({ name: service, level, redact, base: { service } }, destination ?? process.stdout);
}
