/** How many live resources each resource service holds in a VPC (clients/vpc-usage.ts asks them). */
export interface VpcUsage {
  /** Per service name; throws UnavailableError when a service cannot be asked. */
  count(vpcId: string): Promise<Record<string, number>>;
}
