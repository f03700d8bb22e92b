import { z } from 'zod';
import { InputError, isUuid } from '@pier/kit';
import type { SecretReference, ReferenceProblem } from './secrets-port.ts';

/** POSIX-portable names: what every shell, Docker and Kubernetes accept alike. */
const KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_VARIABLES = 200;
export const MAX_VALUE_BYTES = 32 * 1024;

/** One entry as stored and returned: a literal, or a reference to a key of a secret. */
export type EnvEntry = { key: string; value: string } | { key: string; secret_id: string; secret_key: string };

export function isReference(e: EnvEntry): e is { key: string; secret_id: string; secret_key: string } {
  return 'secret_id' in e;
}

const key = z.string().min(1).max(255).regex(KEY_PATTERN, 'letters, digits and _, not starting with a digit');

// `id` is accepted and ignored so a GET's entries can be sent back as they are.
const entry = z
  .strictObject({
    id: z.string().optional(),
    key,
    value: z
      .string()
      .refine((v) => Buffer.byteLength(v) <= MAX_VALUE_BYTES, `at most ${MAX_VALUE_BYTES} bytes`)
      .optional(),
    secret_id: z.string().min(1).optional(),
    secret_key: z.string().min(1).max(253).optional(),
  })
  .superRefine((e, ctx) => {
    const literal = e.value !== undefined;
    const ref = e.secret_id !== undefined || e.secret_key !== undefined;
    if (literal && ref) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'give either value, or secret_id with secret_key, not both' });
    } else if (!literal && !ref) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'required (or secret_id with secret_key for a secret reference)' });
    } else if (ref && e.secret_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['secret_id'], message: 'required with secret_key' });
    } else if (ref && e.secret_key === undefined) {
      ctx.addIssue({ code: 'custom', path: ['secret_key'], message: 'required with secret_id' });
    }
  });

export const putEnvBody = z.strictObject({
  variables: z.array(entry).max(MAX_VARIABLES, `at most ${MAX_VARIABLES} variables`),
});
export type PutEnvInput = z.infer<typeof putEnvBody>;

/** The entries of a PUT, in order, with the rules zod cannot see: unique keys, well-formed ids. */
export function entriesFromPut(input: PutEnvInput): EnvEntry[] {
  const seen = new Set<string>();
  return input.variables.map((v, i) => {
    if (seen.has(v.key)) {
      throw new InputError(`variables.${i}.key: "${v.key}" appears more than once`, 'duplicate_env_key', { field: `variables.${i}.key` });
    }
    seen.add(v.key);
    if (v.secret_id !== undefined) {
      // Secret ids are UUIDs; anything else cannot name a secret, so it is unknown, not malformed.
      if (!isUuid(v.secret_id)) {
        throw new InputError(`variables.${i}.secret_id: no secret ${v.secret_id} in this VPC`, 'secret_not_found', { field: `variables.${i}.secret_id` });
      }
      return { key: v.key, secret_id: v.secret_id.toLowerCase(), secret_key: v.secret_key! };
    }
    return { key: v.key, value: v.value! };
  });
}

export function referencesOf(entries: EnvEntry[]): SecretReference[] {
  const refs = new Map<string, SecretReference>();
  for (const e of entries) {
    if (isReference(e)) refs.set(`${e.secret_id}/${e.secret_key}`, { secretId: e.secret_id, key: e.secret_key });
  }
  return [...refs.values()];
}

/** A reference problem told against the variable that carries it. */
export function describeProblem(entries: EnvEntry[], p: ReferenceProblem): { field: string; message: string } {
  const i = entries.findIndex((e) => isReference(e) && e.secret_id === p.secretId && e.secret_key === p.key);
  const variable = i >= 0 ? entries[i]!.key : '?';
  const message =
    p.reason === 'secret_not_found'
      ? `secret ${p.secretId} (referenced by ${variable}) does not exist in this VPC`
      : `secret ${p.secretId} has no key "${p.key}" (referenced by ${variable})`;
  return { field: `variables.${i}.${p.reason === 'secret_not_found' ? 'secret_id' : 'secret_key'}`, message };
}
