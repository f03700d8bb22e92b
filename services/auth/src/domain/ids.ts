import { isUuid, NotFoundError } from '@pier/kit';

/**
 * An identifier that is not a UUID cannot name anything we hold: it is "not found"
 * (404), exactly like a well-formed id that matches nothing, and never reaches SQL.
 */
export function requireId(id: string, thing: string, code: string): string {
  if (!isUuid(id)) throw notFound(thing, code);
  return id.toLowerCase();
}

export function notFound(thing: string, code: string): NotFoundError {
  return new NotFoundError(`${thing} not found`, code);
}

export const workspaceNotFound = () => notFound('workspace', 'workspace_not_found');
export const vpcNotFound = () => notFound('VPC', 'vpc_not_found');
export const memberNotFound = () => notFound('member', 'member_not_found');
export const apiKeyNotFound = () => notFound('API key', 'api_key_not_found');
export const sessionNotFound = () => notFound('CLI session', 'cli_session_not_found');
