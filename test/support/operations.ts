/**
 * Calling any operation of the merged OpenAPI document the way a client would, for tests
 * that walk every operation (test/e2e/authorization.test.ts): a JSON body, a raw body or
 * none; a server-sent event stream is answered by its status only (the body is dropped);
 * a WebSocket route (`x-pier-websocket`) is a real handshake, whose status is the answer.
 */
import { openShell } from '@pier/testing';

export interface OpenApiOperation {
  summary?: string;
  'x-pier-role'?: string;
  'x-pier-websocket'?: boolean;
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, unknown>;
}

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  minLength?: number;
  format?: string;
  default?: unknown;
}

export interface OperationRef {
  method: string;
  /** The path template, `{name}` for each parameter. */
  path: string;
  op: OpenApiOperation;
}

/** Every operation of an OpenAPI document, in the document's order. */
export function operationsOf(doc: { paths: Record<string, Record<string, OpenApiOperation>> }): OperationRef[] {
  const out: OperationRef[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) out.push({ method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

/** The names of a path template's parameters, in order. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
}

export function fillPath(path: string, ids: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const id = ids[name];
    if (id === undefined) throw new Error(`no id for path parameter {${name}} of ${path}: give the test a real one`);
    return encodeURIComponent(id);
  });
}

export type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; contentType: string; data: Uint8Array };

export interface Answer {
  status: number;
  body: any;
}

/**
 * One request. Never throws on a status; a response that is an event stream is cut as
 * soon as its status is known, and any answer slower than `timeoutMs` is a failure.
 */
export async function callOperation(baseUrl: string, method: string, path: string, token: string | undefined, body: Body, timeoutMs = 20_000): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  let payload: string | Uint8Array | undefined;
  if (body.kind === 'json') {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body.value);
  } else if (body.kind === 'raw') {
    headers['content-type'] = body.contentType;
    payload = body.data;
  }
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const res = await fetch(baseUrl + path, { method, headers, body: payload as BodyInit | undefined, signal: abort.signal });
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      abort.abort();
      return { status: res.status, body: undefined };
    }
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text.length > 0) parsed = type.includes('json') ? JSON.parse(text) : text;
    return { status: res.status, body: parsed };
  } finally {
    clearTimeout(timer);
  }
}

/** A WebSocket handshake: 101 when it opened (closed again at once), else the refusal's status and JSON body. */
export async function handshake(baseUrl: string, path: string, token: string | undefined): Promise<Answer> {
  const url = baseUrl.replace(/^http/, 'ws') + path;
  try {
    const shell = await openShell(url, token === undefined ? {} : { authorization: `Bearer ${token}` });
    shell.ws.terminate();
    return { status: 101, body: undefined };
  } catch (err) {
    const refused = err as { status?: number; body?: unknown };
    if (typeof refused.status !== 'number') throw err;
    return { status: refused.status, body: refused.body };
  }
}

/**
 * A body that satisfies a JSON schema's required fields with plain values (the first enum
 * value, a minimum, "x"): enough for a request to get past validation to the handler.
 */
export function sampleOf(schema: JsonSchema | undefined): unknown {
  if (!schema) return {};
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const alt = schema.anyOf ?? schema.oneOf;
  if (alt?.length) return sampleOf(alt.find((s) => s.type !== 'null') ?? alt[0]);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = sampleOf(schema.properties?.[name]);
      return out;
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'string':
      if (schema.format === 'uri') return 'https://example.com/x';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return {};
  }
}

/** Runs `tasks` with at most `limit` at a time; resolves when all are done, in order. */
export async function limited<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}
