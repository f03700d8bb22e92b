// An event as GET /workspaces/{ws}/events answers it, for the tests that read the audit log.
export interface Ev {
  id: string;
  type: string;
  resource: { kind: string; id: string; name: string | null };
  actor: { user_id: string; email: string | null; credential: { kind: string; id: string | null; name: string | null } | null } | null;
  source_ip: string | null;
  vpc_id: string | null;
  data: Record<string, unknown>;
}
