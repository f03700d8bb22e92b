import { createHash } from 'node:crypto';

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
 * Start of the Linux bridge name of every VPC's Docker network. The host firewall keys its
 * rules on it (iptables `-i pvpc+`), so a network is covered from the moment it exists.
 */
export const VPC_BRIDGE_PREFIX = 'pvpc';

/** The bridge interface of a VPC's Docker network: the prefix and a hash of the id (15 characters, the kernel's limit). */
export function vpcBridge(vpcId: string): string {
  return `${VPC_BRIDGE_PREFIX}${createHash('sha256')
    .update(vpcId)
    .digest('hex')
    .slice(0, 15 - VPC_BRIDGE_PREFIX.length)}`;
}

/**
 * Kubernetes `Secret` holding a Pier secret's values, in `vpcNamespace(vpcId)`. Named by
 * the secret's id so compute can reference it (`secretKeyRef`) from the id alone, and so
 * it never collides with Secrets that operators or other services keep in the namespace.
 */
export function secretObjectName(secretId: string): string {
  return `pier-secret-${secretId}`.toLowerCase();
}

/**
 * Prefixes of the names Pier gives its own objects in a tenant's network or namespace:
 * containers, network aliases (`pier-svc-<id>`, the edge's upstream), namespaces, and the
 * databases' `db-<id>-rw`/`-ro` hosts. A tenant's service or database named like one of
 * them could answer for it, so such names are refused.
 */
export const RESERVED_NAME_PREFIXES = ['pier-', 'db-'] as const;

/** Why `name` may not be given to a tenant's resource, or null when it may. */
export function reservedNameProblem(name: string): string | null {
  const prefix = RESERVED_NAME_PREFIXES.find((p) => name.startsWith(p));
  return prefix
    ? `must not start with "${prefix}": names starting with ${RESERVED_NAME_PREFIXES.map((p) => `"${p}"`).join(' or ')} are the platform's own`
    : null;
}
