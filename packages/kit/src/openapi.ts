import { z } from 'zod';
import type { Route } from './route.ts';
import type { UpgradeRoute } from './upgrade.ts';

// The OpenAPI 3.1 `paths` of a service, written from its routes' contracts.

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, location: 'path' | 'query', path: string) {
  const names = location === 'path' ? [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!) : [];
  const js = schema ? (jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] }) : {};
  const props = js.properties ?? {};
  const all = new Set([...names, ...Object.keys(props)]);
  return [...all].map((name) => ({
    name,
    in: location,
    required: location === 'path' ? true : (js.required ?? []).includes(name),
    schema: props[name] ?? { type: 'string' },
  }));
}

const ERROR_BODY_SCHEMA = {
  type: 'object',
  properties: { error: { type: 'string' }, code: { type: 'string' } },
  required: ['error', 'code'],
};

/** Every write takes an `Idempotency-Key` (idempotency.ts); its own answers are documented with it. */
function documentIdempotency(op: Record<string, unknown>, r: Route): void {
  (op.parameters as unknown[]).push({
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the request safe to retry: sent again with the same key, method, path and body within 24 hours, it is not run again and gets ' +
      'the first answer (with `Idempotent-Replayed: true`). 1 to 255 printable ASCII characters; a new UUID per request is a good choice.' +
      (r.shownOnce ? ` A replay carries ${r.shownOnce.map((f) => `\`${f}\``).join(', ')} as null: it is shown once and never stored.` : ''),
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]{1,255}$' },
  });
  const responses = op.responses as Record<string, unknown>;
  for (const [status, response] of Object.entries(responses)) {
    if (!status.startsWith('2') || !r.shownOnce) continue;
    const schema = (response as { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }).content?.['application/json']?.schema;
    for (const field of r.shownOnce) {
      const property = schema?.properties?.[field];
      if (property)
        schema.properties![field] = { anyOf: [property, { type: 'null' }], description: 'Shown once; null when the answer is replayed for an Idempotency-Key' };
    }
  }
  const json = (description: string) => ({ description, content: { 'application/json': { schema: ERROR_BODY_SCHEMA } } });
  responses['400'] ??= json('Invalid request (`invalid_idempotency_key`: a malformed Idempotency-Key)');
  responses['409'] ??= json('`idempotency_key_in_use`: a request with this Idempotency-Key is still running');
  responses['422'] ??= json('`idempotency_key_reused`: this Idempotency-Key was sent with a different method, path or body');
}

/** The `paths` object of an OpenAPI 3.1 document for these routes. */
export function openApiPaths(routes: Route[], upgrades: UpgradeRoute[] = []): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const u of upgrades) {
    (paths[u.path] ??= {}).get = {
      summary: u.summary,
      description: 'A WebSocket upgrade (GET with Connection: Upgrade); the token may come as the `access_token` query parameter.',
      tags: [u.tag],
      'x-pier-role': u.access,
      'x-pier-websocket': true,
      parameters: [...parameters(u.params, 'path', u.path), ...parameters(u.query, 'query', u.path)],
      responses: Object.fromEntries(
        Object.entries(u.responses).map(([status, resp]) => [
          status,
          resp.schema
            ? { description: resp.description, content: { 'application/json': { schema: jsonSchema(resp.schema, 'output') } } }
            : { description: resp.description },
        ]),
      ),
    };
  }
  for (const r of routes) {
    if (r.access === 'Service') continue;
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      'x-pier-role': r.access === 'User' ? 'any authenticated user' : r.access,
      parameters: [...parameters(r.params, 'path', r.path), ...parameters(r.query, 'query', r.path)],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, resp]) => [
          status,
          resp.schema
            ? { description: resp.description, content: { [resp.contentType ?? 'application/json']: { schema: jsonSchema(resp.schema, 'output') } } }
            : { description: resp.description },
        ]),
      ),
    };
    if (r.method !== 'get') documentIdempotency(op, r);
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
    if (r.rawBody) {
      const binary = { schema: { type: 'string', format: 'binary' } };
      op.requestBody = { required: true, description: r.rawBody.description, content: Object.fromEntries(r.rawBody.contentTypes.map((t) => [t, binary])) };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return paths;
}
