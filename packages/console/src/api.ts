// The console's only way to the API: the typed SDK (@pier/sdk), against the origin that
// served these files, with the bearer token the person pasted. No cookies are involved.
import { createPierClient, LogResume, PierApiError, unwrap, type PierClient, type components, type paths } from '@pier/sdk';

export { LogResume, unwrap, PierApiError };
export type { PierClient, components, paths };

const TOKEN_KEY = 'pier.console.token';

/** The token lives in this tab's session storage only: closing the tab forgets it. */
export const tokenStore = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(SCOPE_KEY);
  },
};

const SCOPE_KEY = 'pier.console.scope';

export interface Scope {
  workspaceId: string;
  vpcId: string;
  /** The person's role there when it was last shown. */
  role: Role;
}

export const scopeStore = {
  get(): Partial<Scope> {
    try {
      return JSON.parse(sessionStorage.getItem(SCOPE_KEY) ?? '{}') as Partial<Scope>;
    } catch {
      return {};
    }
  },
  set: (scope: Partial<Scope>) => sessionStorage.setItem(SCOPE_KEY, JSON.stringify(scope)),
};

export function clientFor(token: string): PierClient {
  return createPierClient({ baseUrl: location.origin, token });
}

/** The API's own words for a failure: its `error`, and the field it names. */
export function messageOf(err: unknown): string {
  if (err instanceof PierApiError) return err.field ? `${err.message} (field: ${err.field})` : err.message;
  return err instanceof Error ? err.message : String(err);
}

export type Role = 'owner' | 'admin' | 'developer' | 'viewer';

/** Every write the API offers needs Admin or Owner (the OpenAPI document's x-pier-role). */
export const canWrite = (role: Role | undefined): boolean => role === 'owner' || role === 'admin';
