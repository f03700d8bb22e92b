// Live data without a data-fetching library: a read is a function of the SDK, polled while
// the tab is visible and read again at once after any write (invalidate()). This is all
// the console needs of TanStack Query (see the README), at a fraction of its size.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

/** Reads every query on screen again (after a write). */
export function invalidate(): void {
  for (const l of listeners) l();
}

export interface QueryState<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  refetch: () => void;
}

/**
 * `key` names what is read: a new key drops the old data. `pollMs` reads again that long
 * after each answer (only while the page is visible); 0 reads once.
 */
export function useQuery<T>(key: string | null, read: () => Promise<T>, pollMs = 0): QueryState<T> {
  const [state, setState] = useState<{ key: string | null; data?: T; error?: unknown; loading: boolean }>({ key, loading: key !== null });
  const readRef = useRef(read);
  readRef.current = read;
  const [tick, setTick] = useState(0);
  const refetch = useCallback(() => setTick((t) => t + 1), []);

  useEffect(() => {
    if (key === null) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    // A read asked for while one is in flight (a write just finished) runs once it ends:
    // the one in flight may have started before the write.
    let again = false;
    const run = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      again = false;
      clearTimeout(timer);
      try {
        const data = await readRef.current();
        if (live) setState({ key, data, error: undefined, loading: false });
      } catch (error) {
        if (live) setState((s) => ({ key, data: s.key === key ? s.data : undefined, error, loading: false }));
      } finally {
        running = false;
        if (live && again) void run();
        else if (live && pollMs > 0) schedule();
      }
    };
    const schedule = () => (timer = setTimeout(() => (document.hidden ? schedule() : void run()), pollMs));
    setState((s) => (s.key === key ? s : { key, loading: true }));
    void run();
    listeners.add(run);
    return () => {
      live = false;
      clearTimeout(timer);
      listeners.delete(run);
    };
  }, [key, pollMs, tick]);

  const current = state.key === key;
  return { data: current ? state.data : undefined, error: current ? state.error : undefined, loading: !current || state.loading, refetch };
}

/** A write: `run` calls it (null when it failed, else `{ value }`), `pending` while it runs, `error` when it failed; success invalidates every query. */
export function useMutation<A extends unknown[], T>(write: (...args: A) => Promise<T>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(
    async (...args: A): Promise<{ value: T } | null> => {
      setPending(true);
      setError(undefined);
      try {
        const result = await write(...args);
        invalidate();
        return { value: result };
      } catch (err) {
        setError(err);
        return null;
      } finally {
        setPending(false);
      }
    },
    [write],
  );
  return { run, pending, error, reset: () => setError(undefined) };
}
