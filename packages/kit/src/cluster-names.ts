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

/**
 * Kubernetes `Secret` holding a Pier secret's values, in `vpcNamespace(vpcId)`. Named by
 * the secret's id so compute can reference it (`secretKeyRef`) from the id alone, and so
 * it never collides with Secrets that operators or other services keep in the namespace.
 */
export function secretObjectName(secretId: string): string {
  return `pier-secret-${secretId}`.toLowerCase();
}
