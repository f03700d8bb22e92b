import { describe, expect, it } from 'vitest';
import { parseWith } from '@pier/kit';
import { createSecretInput, SECRET_MAX_BYTES } from '../src/domain/secret-rules.ts';

const parse = (body: unknown) => parseWith(createSecretInput, body, 'body');
const problem = (body: unknown): string => {
  try {
    parse(body);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('secret rules', () => {
  it('accepts a DNS-1123 label name and a flat map of env-var keys', () => {
    expect(parse({ name: 'db-creds-2', values: { DB_PASSWORD: 'x', _private: '', a1: 'ünïcode' } })).toEqual({
      name: 'db-creds-2',
      values: { DB_PASSWORD: 'x', _private: '', a1: 'ünïcode' },
    });
    expect(parse({ name: 'a'.repeat(63), values: { K: 'v' } }).name).toHaveLength(63);
  });

  it.each([
    [{ values: { K: 'v' } }, /name: is required/],
    [{ name: 5, values: { K: 'v' } }, /name: must be a string/],
    [{ name: '', values: { K: 'v' } }, /name: must not be empty/],
    [{ name: 'Upper', values: { K: 'v' } }, /name: must be a DNS-1123 label/],
    [{ name: '-lead', values: { K: 'v' } }, /DNS-1123 label/],
    [{ name: 'trail-', values: { K: 'v' } }, /DNS-1123 label/],
    [{ name: 'has.dot', values: { K: 'v' } }, /DNS-1123 label/],
    [{ name: 'under_score', values: { K: 'v' } }, /DNS-1123 label/],
    [{ name: 'a'.repeat(64), values: { K: 'v' } }, /name: must be at most 63 characters/],
    [{ name: 'ok' }, /values: is required/],
    [{ name: 'ok', values: ['a'] }, /values: must be an object of string keys to string values, not an array/],
    [{ name: 'ok', values: 'x' }, /values: must be an object.*not a string/],
    [{ name: 'ok', values: {} }, /values: must hold at least one key/],
    [{ name: 'ok', values: { K: { nested: 'x' } } }, /values\.K: must be a string, not an object \(values are a flat map/],
    [{ name: 'ok', values: { K: ['x'] } }, /values\.K: must be a string, not an array/],
    [{ name: 'ok', values: { K: 1 } }, /values\.K: must be a string, not a number/],
    [{ name: 'ok', values: { K: true } }, /values\.K: must be a string, not a boolean/],
    [{ name: 'ok', values: { K: null } }, /values\.K: must be a string, not null/],
    [{ name: 'ok', values: { '': 'x' } }, /values: keys must not be empty/],
    [{ name: 'ok', values: { 'MY-KEY': 'x' } }, /values: key "MY-KEY" cannot be an environment variable name/],
    [{ name: 'ok', values: { '1ABC': 'x' } }, /cannot be an environment variable name/],
    [{ name: 'ok', values: { 'A.B': 'x' } }, /cannot be an environment variable name/],
    [{ name: 'ok', values: { K: 'a\u0000b' } }, /values\.K: must not contain NUL/],
    [{ name: 'ok', values: { K: 'x'.repeat(SECRET_MAX_BYTES) } }, /values: total size 65537 bytes exceeds the limit of 65536 bytes/],
    [{ name: 'ok', values: { K: 'v' }, extra: 1 }, /Unrecognized key/],
    [[], /must be a JSON object/],
  ])('rejects %j', (body, message) => {
    expect(problem(body)).toMatch(message);
  });

  it('refuses a __proto__ key instead of silently dropping it', () => {
    expect(problem(JSON.parse('{"name":"ok","values":{"__proto__":"x","A":"b"}}'))).toMatch(/key "__proto__" is reserved/);
  });

  it('counts the size in UTF-8 bytes', () => {
    // 3 bytes per character: 21845 * 3 = 65535, plus the one-byte key = 65536, right at the bound.
    expect(() => parse({ name: 'ok', values: { K: '€'.repeat(21845) } })).not.toThrow();
    expect(problem({ name: 'ok', values: { K: '€'.repeat(21846) } })).toMatch(/exceeds the limit/);
  });
});
