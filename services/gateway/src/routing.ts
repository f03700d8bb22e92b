// Which service owns a public path, and which workspace and VPC it names. Pure string
// work on the hot path: a few indexOf calls, and slices only for the ids we hand to auth.

export type Upstream = 'auth' | 'compute' | 'databases' | 'secrets' | 'events';

export interface RouteTarget {
  upstream: Upstream;
  /** Workspace named by the path, '' when none. */
  workspaceId: string;
  /** VPC named by the path, '' when none. */
  vpcId: string;
}

export const API_PREFIX = '/api/v1';

/** Resource collections under a VPC that a service other than auth owns. */
const VPC_RESOURCES = new Map<string, Upstream>([
  ['services', 'compute'],
  ['databases', 'databases'],
  ['secrets', 'secrets'],
]);

/**
 * Collections outside any workspace that a service other than auth owns: what the
 * installation offers is the same for every caller, so it is not under a workspace.
 */
const TOP_LEVEL_RESOURCES = new Map<string, Upstream>([['database-engines', 'databases']]);

/** End of the segment starting at `from`: the next '/' or the end of the path. */
function segmentEnd(path: string, from: number): number {
  const slash = path.indexOf('/', from);
  return slash === -1 ? path.length : slash;
}

function decode(id: string): string {
  if (id.indexOf('%') === -1) return id;
  try {
    return decodeURIComponent(id);
  } catch {
    return id;
  }
}

/** Does `path` hold `word` exactly between `from` and `end`? No slicing. */
function segmentIs(path: string, from: number, end: number, word: string): boolean {
  return end - from === word.length && path.startsWith(word, from);
}

/**
 * `/api/v1/workspaces/{ws}/vpcs/{vpc}/{services|databases|secrets}...` goes to that
 * service, `/api/v1/workspaces/{ws}/{events|webhooks}...` to events,
 * `/api/v1/database-engines` to databases; every other `/api/v1` path goes to auth (workspaces, members, VPCs, API keys,
 * CLI sessions — and auth's own JSON 404 for anything unknown). Returns null outside
 * `/api/v1`. `path` must not carry a query string.
 */
export function routeOf(path: string): RouteTarget | null {
  const n = path.length;
  if (!path.startsWith(API_PREFIX) || (n > API_PREFIX.length && path.charCodeAt(API_PREFIX.length) !== 47) /* / */) {
    return null;
  }
  // /api/v1/workspaces
  let from = API_PREFIX.length + 1;
  let end = segmentEnd(path, from);
  if (from >= n || !segmentIs(path, from, end, 'workspaces') || end + 1 >= n) {
    return { upstream: (from < n && TOP_LEVEL_RESOURCES.get(path.slice(from, end))) || 'auth', workspaceId: '', vpcId: '' };
  }
  // /{ws}
  from = end + 1;
  end = segmentEnd(path, from);
  const workspaceId = decode(path.slice(from, end));
  if (end + 1 >= n) return { upstream: 'auth', workspaceId, vpcId: '' };
  // /vpcs (or /events and /webhooks: the events service's audit log, stream and webhooks)
  from = end + 1;
  end = segmentEnd(path, from);
  if (segmentIs(path, from, end, 'events') || segmentIs(path, from, end, 'webhooks')) return { upstream: 'events', workspaceId, vpcId: '' };
  if (!segmentIs(path, from, end, 'vpcs') || end + 1 >= n) return { upstream: 'auth', workspaceId, vpcId: '' };
  // /{vpc}
  from = end + 1;
  end = segmentEnd(path, from);
  const vpcId = decode(path.slice(from, end));
  if (end + 1 >= n) return { upstream: 'auth', workspaceId, vpcId };
  // /{resource}
  from = end + 1;
  end = segmentEnd(path, from);
  return { upstream: VPC_RESOURCES.get(path.slice(from, end)) ?? 'auth', workspaceId, vpcId };
}
