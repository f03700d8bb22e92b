// Names and bounds shared by the routes (which validate them) and the domain.

/**
 * Workspace and VPC names: a DNS label (lowercase letters, digits and `-`, starting and
 * ending with a letter or digit, 1–63 characters), because VPC names end up in cluster
 * object names and hostnames, and the CLI takes them as arguments.
 */
export const RESOURCE_NAME_PATTERN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
export const RESOURCE_NAME_HINT = 'lowercase letters, digits and "-", starting and ending with a letter or digit';

/**
 * API key and CLI session names are labels for people: letters, digits, space, `.`, `_`
 * and `-`, not starting or ending with a space, 1–63 characters.
 */
export const LABEL_PATTERN = /^[A-Za-z0-9._-]([A-Za-z0-9 ._-]*[A-Za-z0-9._-])?$/;
export const LABEL_HINT = 'letters, digits, spaces, ".", "_" and "-", not starting or ending with a space';

export const NAME_MAX = 63;

/** An expiry further out than ten years is a mistake more often than a wish. */
export const MAX_EXPIRES_IN_DAYS = 3650;
export const DEFAULT_SESSION_DAYS = 30;

export const MAX_SCOPES = 32;
export const SCOPE_MAX = 64;

export const DAY_MS = 24 * 60 * 60 * 1000;

export function expiryAfterDays(days: number | undefined, now: Date): Date | null {
  return days === undefined ? null : new Date(now.getTime() + days * DAY_MS);
}
