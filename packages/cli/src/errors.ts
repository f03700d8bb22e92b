import { PierApiError } from '@pier/sdk';

/** A failure the CLI itself detects (not logged in, bad input, a file others can read). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: string,
    /** 2 for usage errors, 1 for everything else. */
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** `{error, code, field?}` of any failure, for stderr. */
export function errorBodyOf(err: unknown): { error: string; code: string; field?: string } {
  if (err instanceof PierApiError) return { ...err.body, error: err.message };
  if (err instanceof CliError) return { error: err.message, code: err.code };
  return { error: err instanceof Error ? err.message : String(err), code: 'internal' };
}

/**
 * A credential the API shows once (a new key, a session token) that came back null: the
 * SDK retried the create after losing its first answer, and the replay never carries it.
 */
export function shownOnce(value: string | null, what: string): string {
  if (value === null)
    throw new CliError(`the answer with the new ${what} was lost on the way and is never shown again; run the command again`, 'shown_once_lost');
  return value;
}
