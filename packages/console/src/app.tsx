import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { canWrite, clientFor, scopeStore, tokenStore, unwrap, type PierClient, type Role } from './api.ts';
import { useQuery } from './data.ts';
import { navigate, onLinkClick, usePath } from './router.ts';
import { SessionContext, type Session } from './session.ts';
import { ErrorNote, Loading } from './ui.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { ServicesPage } from './pages/services.tsx';
import { ServicePage } from './pages/service.tsx';
import { SecretsPage } from './pages/secrets.tsx';
import { ApiKeysPage } from './pages/api-keys.tsx';
import { DatabasePage, DatabasesPage } from './pages/databases.tsx';
import { CreateDatabasePage } from './pages/database-create.tsx';
import { MembersPage } from './pages/members.tsx';

export function App() {
  const [token, setToken] = useState(tokenStore.get());
  const client = useMemo(() => (token ? clientFor(token) : null), [token]);
  if (!client) {
    return (
      <SignIn
        onSignedIn={(t) => {
          tokenStore.set(t);
          setToken(t);
          if (location.pathname === '/' || location.pathname === '/sign-in') navigate('/services', true);
        }}
      />
    );
  }
  return (
    <Shell
      client={client}
      onSignOut={() => {
        tokenStore.clear();
        setToken(null);
        navigate('/', true);
      }}
    />
  );
}

const NAV = [
  { href: '/services', label: 'Services' },
  { href: '/databases', label: 'Databases' },
  { href: '/secrets', label: 'Secrets' },
  { href: '/api-keys', label: 'API keys' },
  { href: '/members', label: 'Members' },
];

function Shell({ client, onSignOut }: { client: PierClient; onSignOut: () => void }) {
  const path = usePath();
  const saved = scopeStore.get();
  const [workspaceId, setWorkspaceId] = useState(saved.workspaceId ?? '');
  const [vpcId, setVpcId] = useState(saved.vpcId ?? '');
  const me = useQuery('me', () => unwrap(client.GET('/api/v1/me')));
  const workspaces = useQuery('workspaces', () => unwrap(client.GET('/api/v1/workspaces', { params: { query: { limit: 200 } } })));
  const wsItems = workspaces.data?.items ?? [];
  const workspace = wsItems.find((w) => w.id === workspaceId) ?? wsItems[0];
  const vpcs = useQuery(workspace ? `vpcs:${workspace.id}` : null, () =>
    unwrap(client.GET('/api/v1/workspaces/{workspaceID}/vpcs', { params: { path: { workspaceID: workspace!.id }, query: { limit: 200 } } })),
  );
  const vpcItems = vpcs.data?.items ?? [];
  const vpc = vpcItems.find((v) => v.id === vpcId) ?? vpcItems[0];

  useEffect(() => {
    if (workspace && vpc) scopeStore.set({ workspaceId: workspace.id, vpcId: vpc.id });
  }, [workspace?.id, vpc?.id]);
  useEffect(() => {
    if (path === '/' || path === '/sign-in') navigate('/services', true);
  }, [path]);
  // A new screen takes the focus (from the link that led there), so keyboard and screen
  // reader users start at its content, as after a page load.
  const shownPath = useRef(path);
  useEffect(() => {
    if (shownPath.current === path) return;
    shownPath.current = path;
    document.getElementById('main')?.focus();
  }, [path]);

  // A detail screen names a resource of the old workspace or VPC: a switch shows its list.
  const toSection = () => navigate(`/${path.split('/')[1] ?? ''}`);

  const session: Session | null =
    workspace && vpc ? { client, workspaceId: workspace.id, vpcId: vpc.id, role: workspace.role as Role, canWrite: canWrite(workspace.role as Role) } : null;

  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a href="/services" class="brand">
          Pier
        </a>
        <div class="scope">
          <label>
            Workspace
            <select
              value={workspace?.id ?? ''}
              onChange={(e) => {
                setWorkspaceId(e.currentTarget.value);
                setVpcId('');
                toSection();
              }}
            >
              {wsItems.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            VPC
            <select
              value={vpc?.id ?? ''}
              onChange={(e) => {
                setVpcId(e.currentTarget.value);
                toSection();
              }}
            >
              {vpcItems.map((v) => (
                <option key={v.id} value={v.id}>
                  {v.name}
                </option>
              ))}
            </select>
          </label>
        </div>
        <div class="who">
          <span class="muted">
            {me.data?.email ?? me.data?.id ?? ''}
            {workspace ? ` · ${workspace.role}` : ''}
          </span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <nav class="nav" aria-label="Main">
        {NAV.map((n) => (
          <a key={n.href} href={n.href} aria-current={path.startsWith(n.href) ? 'page' : undefined}>
            {n.label}
          </a>
        ))}
      </nav>
      <main id="main" tabIndex={-1}>
        <ErrorNote error={me.error ?? workspaces.error ?? vpcs.error} />
        {session ? (
          <SessionContext.Provider value={session}>
            <Route path={path} />
          </SessionContext.Provider>
        ) : workspaces.loading || vpcs.loading ? (
          <Loading what="workspaces" />
        ) : workspaces.error || vpcs.error ? null : (
          <p>This token has no workspace with a VPC yet.</p>
        )}
      </main>
    </div>
  );
}

function Route({ path }: { path: string }) {
  const service = /^\/services\/([^/]+)$/.exec(path);
  if (service) return <ServicePage id={decodeURIComponent(service[1]!)} />;
  if (path.startsWith('/services')) return <ServicesPage />;
  if (path === '/databases/new') return <CreateDatabasePage />;
  const database = /^\/databases\/([^/]+)(?:\/([^/]+))?$/.exec(path);
  if (database) return <DatabasePage id={decodeURIComponent(database[1]!)} tab={database[2] ?? ''} />;
  if (path.startsWith('/databases')) return <DatabasesPage />;
  if (path.startsWith('/secrets')) return <SecretsPage />;
  if (path.startsWith('/api-keys')) return <ApiKeysPage />;
  if (path.startsWith('/members')) return <MembersPage />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No screen at {path}. <a href="/services">Go to services</a>.
      </p>
    </section>
  );
}
