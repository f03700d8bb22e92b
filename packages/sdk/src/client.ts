// A small client on top of the generated types: openapi-fetch for typed paths, parameters
// and bodies; the token on every request; errors as typed values or a thrown PierApiError;
// every page of a list as one async iterator.
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';

export type PierClient = Client<paths>;

/** The body of every error response: `{error, code}`, plus `field` for validation errors. */
export type ApiErrorBody = components['schemas']['Error'];

export interface PierClientOptions {
  /** Where the gateway answers, e.g. `http://127.0.0.1:7100` (paths carry `/api/v1`). */
  baseUrl: string;
  /** An API key (`sk-…`), a CLI session token or an OIDC JWT. */
  token?: string;
  /** Sent as User-Agent, so access logs say which client called. */
  userAgent?: string;
  fetch?: typeof globalThis.fetch;
  /**
   * Retrying (retry.ts): writes carry an `Idempotency-Key`, and calls the API ran nothing
   * of (429, 503, a key still in use, a dropped connection) are sent again after the wait
   * it asks for. `false` turns both off.
   */
  retry?: RetryOptions | false;
}

export function createPierClient(options: PierClientOptions): PierClient {
  const fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: options.retry === false ? fetch : retryingFetch(fetch, options.retry),
  });
  client.use({
    onRequest({ request }) {
      if (options.token) request.headers.set('authorization', `Bearer ${options.token}`);
      if (options.userAgent) request.headers.set('user-agent', options.userAgent);
      return request;
    },
  });
  return client;
}

/** A failed call: the HTTP status (0 when the API could not be reached) and the API's error body. */
export class PierApiError extends Error {
  readonly code: string;
  readonly field?: string;
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.error);
    this.name = 'PierApiError';
    this.code = body.code;
    this.field = body.field;
  }
}

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function errorBodyOf(error: unknown, response: Response): ApiErrorBody {
  const e = error as Partial<ApiErrorBody> | undefined;
  if (e && typeof e.error === 'string' && typeof e.code === 'string') return e as ApiErrorBody;
  return { error: `${response.status} ${response.statusText}`.trim(), code: `http_${response.status}` };
}

/**
 * The data of a successful call, or a PierApiError: `await unwrap(client.GET(...))`.
 * A network failure (nothing listening, DNS) becomes status 0 with code `unreachable`.
 */
export async function unwrap<T>(call: Promise<FetchResult<T>>): Promise<T> {
  let result: FetchResult<T>;
  try {
    result = await call;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new PierApiError(0, { error: `cannot reach the Pier API (${cause})`, code: 'unreachable' });
  }
  if (!result.response.ok) throw new PierApiError(result.response.status, errorBodyOf(result.error, result.response));
  return result.data as T;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/**
 * Every item of a paginated list, fetching pages as the loop asks for them:
 * `for await (const s of paginate((cursor) => unwrap(client.GET(path, { params: { path: p, query: { cursor } } })))) …`
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.items;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
}
