// The Pod Security Standard `restricted` (kubernetes.io/docs/concepts/security/pod-security-standards),
// as a check of a pod spec: what the API server's Pod Security Admission would refuse in a
// namespace labelled `pod-security.kubernetes.io/enforce: restricted`. The fake API server
// has no admission; the real-cluster tests hand the same pods to the real one.

type Obj = Record<string, any>;

const VOLUME_TYPES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

/** Every rule of `restricted` the pod spec breaks, one line each ([] when it meets the standard). */
export function restrictedViolations(pod: Obj): string[] {
  const out: string[] = [];
  const podSc: Obj = pod.securityContext ?? {};
  const containers: Obj[] = [...(pod.initContainers ?? []), ...(pod.containers ?? []), ...(pod.ephemeralContainers ?? [])];
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) out.push('host namespaces');
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (!type || !VOLUME_TYPES.has(type)) out.push(`volume ${v.name} of type ${type}`);
  }
  for (const s of podSc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) out.push(`sysctl ${s.name}`);
  if (podSc.runAsUser === 0) out.push('pod runAsUser 0');
  const seccomp = (sc: Obj | undefined) => sc?.seccompProfile?.type as string | undefined;
  if (seccomp(podSc) && !['RuntimeDefault', 'Localhost'].includes(seccomp(podSc)!)) out.push(`pod seccomp ${seccomp(podSc)}`);
  for (const c of containers) {
    const sc: Obj = c.securityContext ?? {};
    const at = `container ${c.name}`;
    if (sc.privileged) out.push(`${at} privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${at} allowPrivilegeEscalation is not false`);
    if (!(sc.runAsNonRoot ?? podSc.runAsNonRoot)) out.push(`${at} runAsNonRoot is not true`);
    if ((sc.runAsUser ?? podSc.runAsUser) === 0) out.push(`${at} runs as uid 0`);
    const profile = seccomp(sc) ?? seccomp(podSc);
    if (!profile || !['RuntimeDefault', 'Localhost'].includes(profile)) out.push(`${at} seccomp ${profile ?? 'unset'}`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) out.push(`${at} does not drop ALL capabilities`);
    for (const cap of sc.capabilities?.add ?? []) if (cap !== 'NET_BIND_SERVICE') out.push(`${at} adds ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${at} hostPort ${p.hostPort}`);
    if (sc.procMount && sc.procMount !== 'Default') out.push(`${at} procMount ${sc.procMount}`);
  }
  return out;
}
