// Client-side routes on the History API: the gateway answers every non-API path with
// index.html, so a reload or a shared link lands on the same screen.
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<(path: string) => void>();

export function navigate(path: string, replace = false): void {
  if (path === location.pathname) return;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  for (const l of listeners) l(path);
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    listeners.add(setPath);
    addEventListener('popstate', onPop);
    return () => {
      listeners.delete(setPath);
      removeEventListener('popstate', onPop);
    };
  }, []);
  return path;
}

/** Plain left clicks on in-app links change the route without a reload. */
export function onLinkClick(e: MouseEvent): void {
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || href.startsWith('/api/') || a.target) return;
  e.preventDefault();
  navigate(href);
}
