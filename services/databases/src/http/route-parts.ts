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
