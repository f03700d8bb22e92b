import { z } from 'zod';

// The rules a secret must satisfy before anything is written. They are the cluster's own
// rules where one exists, so a secret we accept is one every adapter can store and every
// container can receive.

/**
 * Secret names follow the Kubernetes DNS-1123 *label* rule (the stricter of the object-name
 * rules): lowercase letters, digits and '-', starting and ending with a letter or digit,
 * 63 characters at most. The name is carried as a label value on the cluster object, and
 * label values share this bound.
 */
export const SECRET_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const SECRET_NAME_MAX = 63;

/**
 * Keys become environment variable names in containers, so they must be names a POSIX
 * shell and every runtime accept: `[A-Za-z_][A-Za-z0-9_]*`. That set is also inside what
 * a Kubernetes Secret accepts as a data key (`[-._a-zA-Z0-9]+`, 253 characters).
 */
export const SECRET_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const SECRET_KEY_MAX = 253;

/**
 * Bound of one secret: keys plus values, UTF-8 bytes. Kubernetes allows 1 MiB per Secret;
 * 64 KiB is ample for credentials and certificates and keeps every container start (which
 * carries these values in its environment) well inside the kernel's argument limits.
 */
export const SECRET_MAX_BYTES = 64 * 1024;

function describeType(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  if (typeof input === 'object') return 'an object';
  return `a ${typeof input}`;
}

export const secretName = z
  .string({ error: (iss) => (iss.input === undefined ? 'is required' : `must be a string, not ${describeType(iss.input)}`) })
  .min(1, 'must not be empty')
  .max(SECRET_NAME_MAX, `must be at most ${SECRET_NAME_MAX} characters`)
  .regex(SECRET_NAME_PATTERN, "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit")
  .describe(`Unique in the VPC. DNS-1123 label: ${SECRET_NAME_PATTERN.source}, at most ${SECRET_NAME_MAX} characters.`);

const secretValue = z
  .string({
    error: (iss) =>
      `must be a string, not ${describeType(iss.input)} (values are a flat map: nested objects, arrays, numbers, booleans and null are not allowed)`,
  })
  .refine((v) => !v.includes('\0'), 'must not contain NUL characters (a container environment cannot carry them)');

// JSON.parse keeps a `__proto__` key as an own property, but copying it into a plain
// object silently drops it; refuse it here rather than store a secret missing a key.
const rejectProtoKey = (input: unknown, ctx: z.RefinementCtx): unknown => {
  if (input && typeof input === 'object' && Object.prototype.hasOwnProperty.call(input, '__proto__')) {
    ctx.addIssue({ code: 'custom', message: 'key "__proto__" is reserved' });
  }
  return input;
};

const valuesRecord = z
  .record(z.string(), secretValue, {
    error: (iss) =>
      iss.input === undefined
        ? 'is required (an object of string keys to string values)'
        : `must be an object of string keys to string values, not ${describeType(iss.input)}`,
  })
  .superRefine((values, ctx) => {
    const keys = Object.keys(values);
    if (keys.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must hold at least one key' });
      return;
    }
    let bytes = 0;
    for (const key of keys) {
      if (key === '') {
        ctx.addIssue({ code: 'custom', message: 'keys must not be empty' });
      } else if (!SECRET_KEY_PATTERN.test(key)) {
        ctx.addIssue({
          code: 'custom',
          message: `key ${JSON.stringify(key)} cannot be an environment variable name (keys must match ${SECRET_KEY_PATTERN.source})`,
        });
      } else if (key.length > SECRET_KEY_MAX) {
        ctx.addIssue({ code: 'custom', message: `key ${JSON.stringify(key.slice(0, 20))}... is longer than ${SECRET_KEY_MAX} characters` });
      }
      bytes += Buffer.byteLength(key, 'utf8') + Buffer.byteLength(values[key]!, 'utf8');
    }
    if (bytes > SECRET_MAX_BYTES) {
      ctx.addIssue({
        code: 'custom',
        message: `total size ${bytes} bytes exceeds the limit of ${SECRET_MAX_BYTES} bytes (keys plus values, UTF-8)`,
      });
    }
  });

export const secretValues = z
  .preprocess(rejectProtoKey, valuesRecord)
  .describe(
    `Flat map of string keys to string values, at least one key. Keys match ${SECRET_KEY_PATTERN.source} (environment variable names); ` +
      `keys plus values at most ${SECRET_MAX_BYTES} bytes (UTF-8). Values are write-only: no endpoint returns them.`,
  );

export const createSecretInput = z.strictObject(
  { name: secretName, values: secretValues },
  { error: (iss) => (iss.code === 'unrecognized_keys' ? undefined : 'must be a JSON object with `name` and `values`') },
);

export type CreateSecretInput = z.infer<typeof createSecretInput>;
