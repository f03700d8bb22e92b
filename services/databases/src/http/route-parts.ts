import { errorBodySchema, errorResponses, FORBIDDEN_DESCRIPTION } from '@pier/kit';

// What every databases route shares: its paths, tag and the errors any may answer.

export const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases';
export const ONE = `${BASE}/{databaseID}`;
export const TAG = 'databases';

export const errors = errorResponses(
  {
    400: 'invalid request',
    403: FORBIDDEN_DESCRIPTION,
    404: 'database not found',
    503: 'cluster unreachable; nothing was changed',
  },
  errorBodySchema,
);

/**
 * What the installation's cluster offers. Outside any workspace: it is the same for every
 * caller, so any signed-in user may read it (the gateway routes this one path here).
 */
export const ENGINES_PATH = '/api/v1/database-engines';
