// Which VPCs a caller may place a database in (a fork's `target_vpc_id`): auth owns the
// VPC registry, so the domain asks through this port; clients/ implements it over gRPC.

export interface VpcDirectory {
  /**
   * Whether `vpcId` is a VPC of the workspace `identityToken` was issued for. The token is
   * the caller's own (the one the gateway forwarded), so auth answers for the caller's
   * workspace only. Throws UnavailableError when auth cannot be asked.
   */
  isWorkspaceVpc(identityToken: string, vpcId: string): Promise<boolean>;
}
