import type { Request, Response } from 'express';
import type { Logger } from './logger.ts';
import { IDEMPOTENT_REPLAYED_HEADER, idempotencyScope, requestFingerprint, type IdempotencyKeys } from './idempotency.ts';
import { errorAnswer } from './error-answer.ts';
import type { Route, RouteInput, RouteResult } from './route.ts';

// A write sent with an `Idempotency-Key`: run once per key (idempotency.ts keeps the
// answer), replayed after. Internal to the app (not exported from the kit).

export interface IdempotentRun {
  keys: IdempotencyKeys;
  key: string;
  logger: Logger;
}

/** The route's answer for this key: the first attempt's when there was one (then marked replayed on `res`). */
export async function answerIdempotently(
  run: IdempotentRun,
  route: Route,
  req: Request,
  res: Response,
  input: RouteInput<unknown, unknown, unknown>,
): Promise<RouteResult> {
  const workspaceID = (req.params as Record<string, string>).workspaceID;
  const scope = idempotencyScope(workspaceID, input.identity.subject);
  const fingerprint = requestFingerprint(req.method, req.originalUrl, route.rawBody ? rawBodyFingerprint(req) : req.body);
  const { answer, replayed } = await run.keys.run(scope, run.key, fingerprint, async (made) => {
    try {
      const replay = made !== undefined && route.replay ? await route.replay(input, made) : undefined;
      const result = replay ?? (await route.handler(input));
      // A stream is not kept: it is sent as it comes and never replayed.
      if (result.events) return { ...result, keep: false };
      return {
        status: result.status,
        body: result.body,
        headers: result.headers,
        keep: true,
        replayBody: withoutShownOnce(result.body, route.shownOnce),
      };
    } catch (err) {
      return { ...errorAnswer(err, run.logger, res.locals.requestId as string), keep: true };
    }
  });
  if (replayed) res.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  return answer as RouteResult;
}

function withoutShownOnce(body: unknown, fields: string[] | undefined): unknown {
  if (!fields || !body || typeof body !== 'object') return undefined;
  return { ...body, ...Object.fromEntries(fields.map((f) => [f, null])) };
}

/** An uploaded body is not read twice: a retry is the same upload when its type and length are. */
function rawBodyFingerprint(req: Request): unknown {
  return { contentType: req.header('content-type') ?? null, contentLength: req.header('content-length') ?? null };
}
