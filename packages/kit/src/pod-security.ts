// The Pod Security Standard `restricted`, which every VPC namespace enforces on kubernetes:
// a tenant's pod may not run as root, gain privileges, keep a capability or go without a
// seccomp profile. Compute labels the namespaces and shapes service pods so; every other pod
// Pier starts in a VPC namespace (databases' set-up and restore Jobs) must meet it too, or
// the API server refuses it.

/** Pod Security Admission's label, and the level Pier's VPC namespaces enforce. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';
export const POD_SECURITY_LEVEL = 'restricted';

/** A container of a restricted pod: no privilege escalation, no capability. */
export const RESTRICTED_CONTAINER_SECURITY = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } as const;

/**
 * A restricted pod's own settings. `runAsUser` is the image's user when it is not root; for
 * client images that only run a script (and write to /tmp), any unprivileged uid works.
 */
export function restrictedPodSecurity(runAsUser: number): Record<string, unknown> {
  return { runAsNonRoot: true, runAsUser, runAsGroup: runAsUser, seccompProfile: { type: 'RuntimeDefault' } };
}
