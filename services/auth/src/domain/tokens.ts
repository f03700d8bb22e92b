import { createHash, randomBytes } from 'node:crypto';

// The three kinds of bearer token the spec names, told apart by shape alone so that a
// token is looked up in exactly one place.

export const API_KEY_PREFIX = 'sk-';
export const API_KEY_PATTERN = /^sk-[0-9a-f]{64}$/;
/** Listings show this many leading characters of a key (the spec's `key_prefix`). */
export const KEY_PREFIX_LENGTH = 12;
/** CLI session tokens are 32 random bytes as lowercase hex. */
export const SESSION_TOKEN_PATTERN = /^[0-9a-f]{64}$/;

export type TokenKind = 'api_key' | 'jwt' | 'session';

export function tokenKind(token: string): TokenKind {
  if (token.startsWith(API_KEY_PREFIX)) return 'api_key';
  if (token.includes('.')) return 'jwt';
  return 'session';
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export interface NewApiKey {
  /** The full secret: returned once, never stored. */
  key: string;
  keyPrefix: string;
  keyHash: string;
}

export function generateApiKey(): NewApiKey {
  return apiKeyOf(API_KEY_PREFIX + randomBytes(32).toString('hex'));
}

/** A key chosen elsewhere (the bootstrap key an installer set), stored as any other. */
export function apiKeyOf(key: string): NewApiKey {
  return { key, keyPrefix: key.slice(0, KEY_PREFIX_LENGTH), keyHash: sha256Hex(key) };
}

export function generateSessionToken(): { token: string; tokenHash: string } {
  const token = randomBytes(32).toString('hex');
  return { token, tokenHash: sha256Hex(token) };
}
