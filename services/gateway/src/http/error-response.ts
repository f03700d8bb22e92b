import type http from 'node:http';
import { errorBody, httpStatusOf, REQUEST_ID_HEADER, type Logger } from '@pier/kit';
import { asPierError } from './admission.ts';

// The gateway's own answers on a plain request, written on the bare ServerResponse (the
// hot path has no express): the same JSON error body as the kit's express error handler.

/** Writes a JSON error; a response already under way is cut instead. */
export function writeJsonError(res: http.ServerResponse, status: number, body: Record<string, unknown>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** Answers with an error's status and JSON body; one that is not expected (a 5xx but 503) is logged. */
export function answerError(res: http.ServerResponse, err: unknown, logger: Logger): void {
  const known = asPierError(err);
  const status = httpStatusOf[known.kind];
  if (status >= 500 && known.kind !== 'unavailable') logger.error({ err, requestId: res.getHeader(REQUEST_ID_HEADER) }, 'unhandled error');
  writeJsonError(res, status, errorBody(known));
}
