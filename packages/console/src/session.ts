// What every screen works in: the SDK client with the person's token, the workspace and
// VPC chosen in the header, and the person's role there.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { PierClient, Role } from './api.ts';

export interface Session {
  client: PierClient;
  workspaceId: string;
  vpcId: string;
  role: Role;
  /** Owner or Admin: only they see write controls (every write needs Admin). */
  canWrite: boolean;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in screen');
  return s;
}
