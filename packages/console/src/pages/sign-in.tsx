import { useState } from 'preact/hooks';
import { clientFor, unwrap } from '../api.ts';
import { ErrorNote } from '../ui.tsx';

/** Sign-in by pasting a token: an API key (sk-…) or a CLI session token. */
export function SignIn({ onSignedIn }: { onSignedIn: (token: string) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [pending, setPending] = useState(false);
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Pier</h1>
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
    </main>
  );
}
