/**
 * A small fetch wrapper for tests: every call resolves (never throws on a status) to
 * `{ status, body, headers }`, `body` being parsed JSON when the response says JSON, the
 * text otherwise, and `undefined` when empty.
 */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  /** Extra headers (they win over the wrapper's own). */
  headers?: Record<string, string>;
  /** A body sent as it is (for malformed JSON); `body` is JSON-encoded otherwise. */
  rawBody?: string;
}

export interface Api {
  get<T = any>(path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse<T>>;
  request<T = any>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse<T>>;
}

export function api(baseUrl: string, baseHeaders: Record<string, string> = {}): Api {
  const request = async (method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...baseHeaders };
    let payload: string | undefined;
    if (opts.rawBody !== undefined) {
      payload = opts.rawBody;
      headers['content-type'] = 'application/json';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    Object.assign(headers, opts.headers);
    const res = await fetch(baseUrl + path, { method: method.toUpperCase(), headers, body: payload });
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text.length > 0) {
      parsed = (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    get: (path, opts) => request('GET', path, undefined, opts),
    delete: (path, opts) => request('DELETE', path, undefined, opts),
    post: (path, body, opts) => request('POST', path, body, opts),
    put: (path, body, opts) => request('PUT', path, body, opts),
    patch: (path, body, opts) => request('PATCH', path, body, opts),
    request,
  };
}
