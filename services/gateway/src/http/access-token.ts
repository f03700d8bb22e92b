import { ACCESS_TOKEN_PARAM } from './openapi.ts';

/**
 * Takes `access_token` out of a raw query string, leaving every other parameter exactly
 * as the client wrote it.
 */
export function takeAccessToken(query: string): { token: string | null; rest: string } {
  if (!query) return { token: null, rest: '' };
  let token: string | null = null;
  const kept: string[] = [];
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    if (name === ACCESS_TOKEN_PARAM) {
      const value = eq === -1 ? '' : part.slice(eq + 1);
      try {
        token ??= decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        token ??= value;
      }
    } else if (part) kept.push(part);
  }
  return { token, rest: kept.join('&') };
}
