import { z } from 'zod';

// The path every workspace's and VPC's resources live under
// (/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/...) and the scope the domain takes from it.
// The ids are plain strings here: the domain checks them, and an id that is not a UUID is
// a 404, not a 400.

export const workspacePathParams = z.object({ workspaceID: z.string() });
export const vpcPathParams = workspacePathParams.extend({ vpcID: z.string() });

/** A VPC of a workspace, as the domains take it. */
export interface VpcScope {
  workspaceId: string;
  vpcId: string;
}

/** The scope of a VPC-scoped route's path parameters. */
export const vpcScope = (p: { workspaceID: string; vpcID: string }): VpcScope => ({ workspaceId: p.workspaceID, vpcId: p.vpcID });
