import { useEffect, useState } from 'preact/hooks';
import { clientFor, unwrap } from '../api.ts';
import { beginSignIn, finishSignIn, type OidcConfig } from '../oidc.ts';
import { navigate } from '../router.ts';
import { ErrorNote, Loading } from '../ui.tsx';

/**
 * Sign-in by pasting a token (an API key, sk-…, or a CLI session token), and, where the
 * platform has an identity provider, "Sign in with <provider>" (oidc.ts). The token field
 * comes first: it is always there, and scripts and people with a key use it.
 */
export function SignIn({ onSignedIn, oidc, notice }: { onSignedIn: (token: string) => void; oidc: OidcConfig | null; notice?: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [pending, setPending] = useState(false);
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Pier</h1>
      {notice && (
        <p class="note note-error" role="alert">
          {notice}
        </p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const t = token.trim();
          setPending(true);
          setError(undefined);
          try {
            await unwrap(clientFor(t).GET('/api/v1/me'));
            onSignedIn(t);
          } catch (err) {
            setError(err);
          } finally {
            setPending(false);
          }
        }}
      >
        <label for="token">Token</label>
        <input id="token" name="token" type="password" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        <p class="hint" id="token-hint">
          An API key (<code>sk-…</code>) or a CLI session token (<code>pier login</code> keeps one in <code>~/.config/pier/credentials.json</code>). It is kept
          in this tab only and forgotten when you sign out or close it.
        </p>
        <ErrorNote error={error} />
        <button type="submit" class="primary" disabled={pending || !token.trim()}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {oidc && (
        <div class="sign-in-provider">
          <p class="muted">or</p>
          <button
            type="button"
            class="primary"
            onClick={() => void beginSignIn(oidc, location.pathname === '/' || location.pathname === '/sign-in' ? '/services' : location.pathname)}
          >
            Sign in with {oidc.provider_name}
          </button>
        </div>
      )}
    </main>
  );
}

/** Where the provider sends the person back: the code is traded for the token, then on to where they were going. */
export function SignInCallback({ config, onSignedIn }: { config: OidcConfig | null; onSignedIn: (token: string) => void }) {
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    if (!config) return setError(new Error('Sign-in with an identity provider is not configured here.'));
    finishSignIn(config).then(({ token, returnTo }) => {
      onSignedIn(token);
      navigate(returnTo, true);
    }, setError);
  }, []);
  if (!error) return <Loading what="your sign-in" />;
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Pier</h1>
      <ErrorNote error={error} />
      <a href="/">Back to sign-in</a>
    </main>
  );
}
