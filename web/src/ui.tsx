// ui.tsx holds the small pieces every page uses: error display, labelled
// fields that show the API's error for their member, the pager and the
// hash router's helpers.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type Schemas } from "./api";

// go navigates to a hash route such as "/agents".
export function go(route: string): void {
  location.hash = `#${route}`;
}

// useRoute is the current hash route, without the leading "#".
export function useRoute(): string {
  const [route, setRoute] = useState(current());
  useEffect(() => {
    const on = () => setRoute(current());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function current(): string {
  return location.hash.replace(/^#/, "") || "/agents";
}

// useClock re-renders every second while on, for retry countdowns.
function useClock(on: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [on]);
  return now;
}

// explain says in words what a user can do about an error code.
const explain: Partial<Record<ApiFailure["code"], string>> = {
  DELETE_PROTECTED:
    "This agent is protected from deletion. Untick “Protect from deletion” in its form, save, then delete it.",
  INSUFFICIENT_PERMISSIONS: "This API key is read-only: sign in with a write key to change anything.",
  UNAUTHORIZED: "The API key was refused: it may be wrong, expired or revoked. Sign in again.",
  NETWORK: "Check that agentd is running.",
};

// ErrorBox shows an API error: the envelope's message, what to do about it
// and, for a rate limit, when to retry.
export function ErrorBox({ error }: { error: unknown }) {
  const now = useClock(error instanceof ApiFailure && error.retryAt !== undefined);
  if (!error) return null;
  if (!(error instanceof ApiFailure)) {
    return (
      <div class="error" role="alert">
        {String(error instanceof Error ? error.message : error)}
      </div>
    );
  }
  const wait = error.retryAt ? Math.max(0, Math.ceil((error.retryAt.getTime() - now) / 1000)) : undefined;
  return (
    <div class="error" role="alert">
      <strong>{error.code}</strong>: {error.message}
      {error.details.reason && !error.message.includes(error.details.reason) && <> ({error.details.reason})</>}
      {explain[error.code] && <p>{explain[error.code]}</p>}
      {wait !== undefined && (
        <p class="retry">
          {wait > 0
            ? `Rate limit reached: retry in ${wait} s (at ${error.retryAt!.toLocaleTimeString()}).`
            : "You may retry now."}
        </p>
      )}
    </div>
  );
}

// fieldOf is the form member a dotted API path belongs to ("bio.0" → "bio").
export function fieldOf(error: unknown): string | undefined {
  return error instanceof ApiFailure ? error.field?.split(".")[0] : undefined;
}

// Field is a labelled input whose API error is shown beneath it and tied to
// it with aria-describedby, so a screen reader reads it with the input.
export function Field(props: {
  id: string;
  label: string;
  error?: unknown;
  hint?: string;
  children: (describedBy: string | undefined, invalid: boolean) => ComponentChildren;
}) {
  const mine = props.error instanceof ApiFailure && fieldOf(props.error) === props.id ? props.error : undefined;
  const errId = `${props.id}-error`;
  const hintId = `${props.id}-hint`;
  const describedBy = [mine ? errId : "", props.hint ? hintId : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class={mine ? "field invalid" : "field"}>
      <label for={props.id}>{props.label}</label>
      {props.children(describedBy, mine !== undefined)}
      {props.hint && (
        <small id={hintId} class="hint">
          {props.hint}
        </small>
      )}
      {mine && (
        <p id={errId} class="field-error" role="alert" data-field={mine.field}>
          {mine.field}: {mine.details.reason ?? mine.message}
        </p>
      )}
    </div>
  );
}

// Pager moves between the pages of a list.
export function Pager({ pagination, onPage }: { pagination?: Schemas["Pagination"]; onPage: (page: number) => void }) {
  if (!pagination) return null;
  const { currentPage, totalPages, totalItems } = pagination;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={currentPage <= 1} onClick={() => onPage(currentPage - 1)}>
        Previous
      </button>
      <span>
        Page {currentPage} of {Math.max(totalPages, 1)} ({totalItems} in all)
      </span>
      <button type="button" disabled={currentPage >= totalPages} onClick={() => onPage(currentPage + 1)}>
        Next
      </button>
    </nav>
  );
}

// when formats a timestamp of the API for people.
export function when(ts: string): string {
  return new Date(ts).toLocaleString();
}

// lines splits a textarea into its non-empty lines.
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}
