import type { Request } from 'express';
import { Transform, type Readable } from 'node:stream';
import { InputError, PayloadTooLargeError } from './errors.ts';
import type { Route } from './route.ts';

// How a route's body arrives: an empty body, or a raw upload streamed under its limit.
// Internal to the app (not exported from the kit).

export function hasNoBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined;
}

/**
 * A raw body as a stream that fails once it passes `limitBytes`; a declared length over
 * it is refused before anything is read, a content type not listed too.
 */
export function rawBodyOf(req: Request, spec: NonNullable<Route['rawBody']>): Readable {
  const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!spec.contentTypes.includes(type)) {
    throw new InputError(`request body: Content-Type must be ${spec.contentTypes.join(' or ')}, not ${type || 'missing'}`, 'invalid_content_type');
  }
  const tooLarge = () => new PayloadTooLargeError(`request body over the limit of ${spec.limitBytes} bytes`);
  if (Number(req.header('content-length') ?? 0) > spec.limitBytes) throw tooLarge();
  let seen = 0;
  return req.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        done(seen > spec.limitBytes ? tooLarge() : null, chunk);
      },
    }),
  );
}
