// hooks.ts holds useQuery, the console's one way to load data for a page,
// useAction, its one way to change something, useReadOnly, useAgentNames,
// and exclusive, the guard that keeps a second send from starting beside a
// running one.
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, call, readOnlyEvent, session } from "./api";

export type Query<T> = {
  // data is the last answer; it stays while a newer one loads, so a page
  // does not flash empty when its filters or page change.
  data: T | undefined;
  // error is the last load's failure, cleared when the next load starts.
  error: unknown;
  loading: boolean;
  // reload loads again with the same inputs.
  reload: () => void;
  // setData replaces the data with an answer got otherwise (a save's).
  setData: (data: T) => void;
};

// useQuery calls load when the component mounts and whenever an input in
// deps changes, as useEffect would. An answer that arrives after its inputs
// changed, after a reload or after the component went away is dropped (and
// its request aborted), so an older answer never replaces a newer one.
export function useQuery<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Query<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    setState((s) => (s.loading && s.error === undefined ? s : { ...s, error: undefined, loading: true }));
    load(abort.signal).then(
      (data) => abort.signal.aborted || setState({ data, loading: false }),
      (error: unknown) => abort.signal.aborted || setState((s) => ({ ...s, error, loading: false })),
    );
    return () => abort.abort();
  }, [...deps, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  const setData = useCallback((data: T) => setState((s) => ({ ...s, data, error: undefined })), []);
  return { data: state.data, error: state.error, loading: state.loading, reload, setData };
}

export type Action = {
  // busy is whether a run is under way (its buttons are disabled).
  busy: boolean;
  // error is the last run's failure, cleared when the next run starts.
  error: unknown;
  // run runs a write: busy while it runs, its failure kept in error. It
  // never rejects, so a handler may call it with void.
  run: (write: () => Promise<void>) => Promise<void>;
  // setError shows a failure found without running (a file that is not
  // JSON), or clears it.
  setError: (error: unknown) => void;
};

// useAction is the state of a form's or a button's write: whether it runs
// and how it last failed.
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = useCallback(async (write: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await write();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

// useReadOnly is whether the API has refused this key a write, so a page
// shows what it lists without the controls that change it. It turns true
// as soon as any write of the page is refused.
export function useReadOnly(): boolean {
  const [readOnly, setReadOnly] = useState(session.readOnly());
  useEffect(() => {
    const on = () => setReadOnly(session.readOnly());
    addEventListener(readOnlyEvent, on);
    return () => removeEventListener(readOnlyEvent, on);
  }, []);
  return readOnly;
}

// useAgentNames maps the account's agents (the first 100) to their names,
// for the lists that show runs of every agent.
export function useAgentNames(): Map<string, string> | undefined {
  const agents = useQuery(
    (signal) =>
      call(api.GET("/agents", { params: { query: { limit: 100 } }, signal })).then(
        (r) => new Map(r.data.agents.map((a) => [a.id, a.name])),
      ),
    [],
  );
  return agents.data;
}

// Lock is held while a guarded call runs; see exclusive.
export type Lock = { held: boolean };

// exclusive runs fn unless lock is held by an earlier call that has not
// ended, in which case the call is dropped: true when fn ran. A button can
// be disabled while busy, but a key handler (Enter in the chat) fires
// anyway, and a disabled state only arrives with the next render: the lock
// is taken at once, so a second Enter cannot start a second turn.
export async function exclusive(lock: Lock, fn: () => Promise<void>): Promise<boolean> {
  if (lock.held) return false;
  lock.held = true;
  try {
    await fn();
  } finally {
    lock.held = false;
  }
  return true;
}
