import type { Scope } from '../domain/context.ts';
import * as s from './schemas.ts';

// What every databases route shares: its paths, tag, scope and the errors any may answer.

export const BASE = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases';
export const ONE = `${BASE}/{databaseID}`;
export const TAG = 'databases';

export const errors = {
  400: { description: 'invalid request', schema: s.errorBody },
  403: { description: 'insufficient workspace permissions', schema: s.errorBody },
  404: { description: 'database not found', schema: s.errorBody },
  503: { description: 'cluster unreachable; nothing was changed', schema: s.errorBody },
};

export const scope = (p: { workspaceID: string; vpcID: string }): Scope => ({ workspaceId: p.workspaceID, vpcId: p.vpcID });
