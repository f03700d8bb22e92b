import type { Route } from '@pier/kit';
import type { ApiKeys } from '../domain/api-keys.ts';
import type { CliSessions } from '../domain/cli-sessions.ts';
import type { Members } from '../domain/members.ts';
import type { Vpcs } from '../domain/vpcs.ts';
import type { Workspaces } from '../domain/workspaces.ts';
import { apiKeyRoutes } from './api-keys.ts';
import { cliSessionRoutes } from './cli-sessions.ts';
import { memberRoutes } from './members.ts';
import { vpcRoutes } from './vpcs.ts';
import { workspaceRoutes } from './workspaces.ts';
import { meRoutes } from './me.ts';

export interface Domain {
  workspaces: Workspaces;
  members: Members;
  vpcs: Vpcs;
  apiKeys: ApiKeys;
  sessions: CliSessions;
}

export function authRoutes(d: Domain): Route[] {
  return [
    ...meRoutes(),
    ...workspaceRoutes(d.workspaces),
    ...memberRoutes(d.members),
    ...vpcRoutes(d.vpcs),
    ...apiKeyRoutes(d.apiKeys),
    ...cliSessionRoutes(d.sessions),
  ];
}
