// The databases service's errors in the domain's terms; kit maps them to HTTP at the edge.
import { ConflictError, NotFoundError } from '@pier/kit';

/**
 * Two live databases drew UUIDs with the same first 8 characters (the short id names
 * external hosts, so it must be unique): the store throws this, provisioning draws again.
 */
export class ShortIdTaken extends Error {
  constructor() {
    super('short id taken');
    this.name = 'ShortIdTaken';
  }
}

export const databaseNotFound = () => new NotFoundError('database not found', 'database_not_found');
export const ruleNotFound = () => new NotFoundError('allowlist rule not found', 'allowlist_rule_not_found');
export const databaseDeleting = () => new ConflictError('database is being deleted', 'database_deleting');
