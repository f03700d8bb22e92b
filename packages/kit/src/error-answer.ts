import type { Logger } from './logger.ts';
import { PierError, InputError, PayloadTooLargeError, errorBody, httpStatusOf } from './errors.ts';
import { pgErrorOf } from './pg-errors.ts';

/** The status and JSON body an error is answered with; an unexpected one is logged. */
export function errorAnswer(err: unknown, logger: Logger, requestId: string | undefined): { status: number; body: Record<string, unknown> } {
  const known = toPierError(err);
  const status = httpStatusOf[known.kind];
  if (status >= 500 && known.kind !== 'unavailable') logger.error({ err, requestId }, 'unhandled error');
  return { status, body: errorBody(known) };
}

function toPierError(err: unknown): PierError {
  if (err instanceof PierError) return err;
  const fromPg = pgErrorOf(err);
  if (fromPg) return fromPg;
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.parse.failed') return new InputError('malformed JSON body', 'malformed_json');
  if (e?.type === 'entity.too.large') return new PayloadTooLargeError('request body too large');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new InputError('unsupported request encoding', 'invalid_request');
  }
  return new PierError('internal', 'internal error', 'internal');
}
