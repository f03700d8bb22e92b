import { AuthenticationError } from '@pier/kit';

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, or null when missing or malformed. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = BEARER.exec(header);
  return m ? m[1]! : null;
}

export const missingToken = () => new AuthenticationError('missing or malformed Authorization header: send Authorization: Bearer <token>', 'missing_token');
