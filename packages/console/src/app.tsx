import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { canWrite, clientFor, messageOf, scopeStore, tokenStore, unwrap, type PierClient, type Role } from './api.ts';
import { CALLBACK_PATH, loadOidcConfig, refreshStore, renew, renewIn, type OidcConfig } from './oidc.ts';
import { useQuery } from './data.ts';
import { navigate, onLinkClick, usePath } from './router.ts';
import { SessionContext, type Session } from './session.ts';
import { ErrorNote, Loading } from './ui.tsx';
import { SignIn, SignInCallback } from './pages/sign-in.tsx';
import { ServicesPage } from './pages/services.tsx';
import { EditServicePage } from './pages/service-edit.tsx';
import { ServicePage } from './pages/service.tsx';
import { CreateServicePage } from './pages/service-create.tsx';
import { SecretsPage } from './pages/secrets.tsx';
import { ApiKeysPage } from './pages/api-keys.tsx';
import { DatabasePage, DatabasesPage } from './pages/databases.tsx';
import { CreateDatabasePage } from './pages/database-create.tsx';
import { MembersPage } from './pages/members.tsx';

export function App() {
  const [token, setToken] = useState(tokenStore.get());
  const [notice, setNotice] = useState<string | undefined>(undefined);
  // undefined while /console-config.json is read; null: token sign-in only.
  const [oidc, setOidc] = useState<OidcConfig | null | undefined>(undefined);
  useEffect(() => void loadOidcConfig().then(setOidc), []);
  const client = useMemo(() => (token ? clientFor(token) : null), [token]);
  const signIn = (t: string) => {
    tokenStore.set(t);
    setToken(t);
    setNotice(undefined);
  };
  const signOut = (why?: string) => {
    tokenStore.clear();
    refreshStore.clear();
    setToken(null);
    setNotice(why);
    navigate('/', true);
  };
  useSilentRefresh(token, oidc, signIn, signOut);

  if (usePath() === CALLBACK_PATH) {
    return oidc === undefined ? <Loading what="sign-in" /> : <SignInCallback config={oidc} onSignedIn={signIn} />;
  }
  if (!client) {
    return (
      <SignIn
        oidc={oidc ?? null}
        notice={notice}
        onSignedIn={(t) => {
          refreshStore.clear();
          signIn(t);
          if (location.pathname === '/' || location.pathname === '/sign-in') navigate('/services', true);
        }}
      />
    );
  }
  return <Shell client={client} onSignOut={() => signOut()} />;
}

/** A provider's ID token is renewed a minute before it expires; when that fails, the person is signed out and told why. */
function useSilentRefresh(token: string | null, oidc: OidcConfig | null | undefined, onRenewed: (t: string) => void, onFailed: (why: string) => void) {
  useEffect(() => {
    if (!token || !oidc || !refreshStore.get()) return;
    const wait = renewIn(token);
    if (wait === null) return;
    const timer = setTimeout(() => {
      renew(oidc).then(onRenewed, (err: unknown) =>
        onFailed(`Your sign-in with ${oidc.provider_name} expired and could not be renewed (${messageOf(err)}). Sign in again.`),
      );
    }, wait);
    return () => clearTimeout(timer);
  }, [token, oidc]);
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
    if (workspace && vpc) scopeStore.set({ workspaceId: workspace.id, vpcId: vpc.id, role: workspace.role as Role });
  }, [workspace?.id, vpc?.id, workspace?.role]);
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

  // The scope this tab last showed is used while the lists that confirm it load, so a
  // reload reads the page's own data at once instead of after two round trips (the
  // services page with 200 services, bench/console-render.ts); the lists correct it.
  const scopeOf = (workspaceId: string, vpcId: string, role: Role): Session => ({ client, workspaceId, vpcId, role, canWrite: canWrite(role) });
  const stillLoading = workspaces.loading || vpcs.loading;
  const session: Session | null =
    workspace && vpc
      ? scopeOf(workspace.id, vpc.id, workspace.role as Role)
      : stillLoading && saved.workspaceId && saved.vpcId && saved.role && (!workspace || workspace.id === saved.workspaceId)
        ? scopeOf(saved.workspaceId, saved.vpcId, saved.role)
        : null;

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
        ) : stillLoading ? (
          <Loading what="workspaces" />
        ) : workspaces.error || vpcs.error ? null : (
          <p>This token has no workspace with a VPC yet.</p>
        )}
      </main>
    </div>
  );
}

function Route({ path }: { path: string }) {
  if (path === '/services/new') return <CreateServicePage />;
  const edit = /^\/services\/([^/]+)\/edit$/.exec(path);
  if (edit) return <EditServicePage id={decodeURIComponent(edit[1]!)} />;
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
