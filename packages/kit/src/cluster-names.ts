// Names the cluster adapters give a VPC's resources. Every service derives them from the
// VPC id alone, so compute, databases and secrets agree without asking each other.

/** Kubernetes namespace of a VPC (RFC 1123 label, 63 characters at most). */
export function vpcNamespace(vpcId: string): string {
  return `pier-vpc-${vpcId}`.slice(0, 63).toLowerCase();
}

/** Docker network of a VPC. */
export function vpcNetwork(vpcId: string): string {
  return `pier-vpc-${vpcId}`;
}
