// ui.tsx holds the small pieces every page uses: error display, labelled
// fields that show the API's error for their member, the pager, the list
// table and the hash router's helpers.
import { type ComponentChildren, Fragment, type JSX } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import { ApiFailure, type Schemas } from "./api";
import { budgetRefusal } from "./money";
import { statusLabel } from "./runs";
import { relative, when } from "./time";

export { relative, when } from "./time";

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
  return location.hash.replace(/^#/, "") || "/overview";
}

// useClock re-renders every `every` ms (a second by default) while on, for
// retry countdowns and times relative to now.
function useClock(on: boolean, every = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setNow(Date.now()), every);
    return () => clearInterval(t);
  }, [on, every]);
  return now;
}

// explain says in words what a user can do about an error code.
const explain: Partial<Record<ApiFailure["code"], string>> = {
  DELETE_PROTECTED:
    "This agent is protected from deletion. Untick “Protect from deletion” in its form, save, then delete it.",
  INSUFFICIENT_PERMISSIONS: "This API key is read-only: sign in with a write key to change anything.",
  INSUFFICIENT_QUOTA:
    "A quota is reached (of the account's agents or webhooks, or of an agent's 10,000 memories, 100 documents and 50 MB of knowledge, or 100 schedules): delete some first.",
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
  // A budget's refusal is said from its details: which budget, how much,
  // when it resets, who can raise it.
  const budget = error.code === "BUDGET_EXCEEDED" ? budgetRefusal(error.details) : undefined;
  const advice = budget?.advice ?? explain[error.code];
  return (
    <div class="error" role="alert">
      <strong>{error.code}</strong>: {budget?.text ?? error.message}
      {error.details.reason && !error.message.includes(error.details.reason) && <> ({error.details.reason})</>}
      {advice && <p>{advice}</p>}
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

// refused is the error of a 400 that names member id, if error is one.
function refused(error: unknown, id: string): ApiFailure | undefined {
  return error instanceof ApiFailure && fieldOf(error) === id ? error : undefined;
}

// describedBy names a field's error (the API's, or the problem found
// before sending) and hint for aria-describedby.
function describedBy(id: string, wrong: boolean, hint: string | undefined): string | undefined {
  return [wrong ? `${id}-error` : "", hint ? `${id}-hint` : ""].filter(Boolean).join(" ") || undefined;
}

// Notes are a field's hint and the API's error for it or, when the API
// has none, the problem the page found in what was typed. The API's is
// announced as it arrives; a problem, which changes as one types, is read
// with the field instead.
function Notes(props: { id: string; mine: ApiFailure | undefined; hint: string | undefined; problem?: string }) {
  const { id, mine, hint, problem } = props;
  return (
    <>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {mine && (
        <p id={`${id}-error`} class="field-error" role="alert" data-field={mine.field}>
          {mine.field}: {mine.details.reason ?? mine.message}
        </p>
      )}
      {!mine && problem && (
        <p id={`${id}-error`} class="field-error">
          {problem}
        </p>
      )}
    </>
  );
}

// Field is a labelled input whose API error is shown beneath it and tied to
// it with aria-describedby, so a screen reader reads it with the input.
// problem, when given, is what the page found wrong before sending.
export function Field(props: {
  id: string;
  label: string;
  error?: unknown;
  hint?: string;
  problem?: string;
  children: (describedBy: string | undefined, invalid: boolean) => ComponentChildren;
}) {
  const mine = refused(props.error, props.id);
  const wrong = mine !== undefined || !!props.problem;
  return (
    <div class={wrong ? "field invalid" : "field"}>
      <label for={props.id}>{props.label}</label>
      {props.children(describedBy(props.id, wrong, props.hint), wrong)}
      <Notes id={props.id} mine={mine} hint={props.hint} problem={props.problem} />
    </div>
  );
}

// FieldProps are what TextField, TextArea and SelectField take besides
// their element's own attributes: Field's, the value and onValue, called
// with the value as it is typed or chosen.
type FieldProps<V extends string> = {
  id: string;
  label: string;
  error?: unknown;
  hint?: string;
  problem?: string;
  value: V;
  onValue: (value: V) => void;
};

// TextField is a Field holding an <input>: any other attribute (type,
// placeholder, required, onFocus…) is passed on to it.
export function TextField(
  props: FieldProps<string> & Omit<JSX.InputHTMLAttributes<HTMLInputElement>, keyof FieldProps<string>>,
) {
  const { id, label, error, hint, problem, value, onValue, ...input } = props;
  return (
    <Field id={id} label={label} error={error} hint={hint} problem={problem}>
      {(desc, invalid) => (
        <input
          {...input}
          id={id}
          value={value}
          aria-describedby={desc}
          aria-invalid={invalid}
          onInput={(e) => onValue(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}

// TextArea is a Field holding a <textarea>, as TextField.
export function TextArea(
  props: FieldProps<string> & Omit<JSX.TextareaHTMLAttributes<HTMLTextAreaElement>, keyof FieldProps<string>>,
) {
  const { id, label, error, hint, problem, value, onValue, ...textarea } = props;
  return (
    <Field id={id} label={label} error={error} hint={hint} problem={problem}>
      {(desc, invalid) => (
        <textarea
          {...textarea}
          id={id}
          value={value}
          aria-describedby={desc}
          aria-invalid={invalid}
          onInput={(e) => onValue(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}

// SelectField is a Field holding a <select> of options (a value, shown as
// its label or as itself).
export function SelectField<V extends string>(
  props: FieldProps<V> & { options: readonly (V | { value: V; label: string })[] },
) {
  const { id, label, error, hint, problem, value, onValue, options } = props;
  return (
    <Field id={id} label={label} error={error} hint={hint} problem={problem}>
      {(desc, invalid) => (
        <select
          id={id}
          value={value}
          aria-describedby={desc}
          aria-invalid={invalid}
          onChange={(e) => onValue(e.currentTarget.value as V)}
        >
          {options.map((o) => {
            const { value: v, label: l } = typeof o === "string" ? { value: o, label: o } : o;
            return (
              <option key={v} value={v}>
                {l}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

// JsonArea is a labelled textarea of JSON checked as it is typed: problem
// (why the text is not what it must hold) shows beneath it, marks it
// invalid and is read with it, as is the hint.
export function JsonArea(props: {
  id: string;
  label: string;
  hint?: string;
  problem?: string;
  rows?: number;
  placeholder?: string;
  value: string;
  onValue: (value: string) => void;
}) {
  const { id, problem, hint } = props;
  return (
    <div class={problem ? "field invalid" : "field"}>
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        class="json"
        rows={props.rows ?? 4}
        spellcheck={false}
        placeholder={props.placeholder}
        value={props.value}
        aria-invalid={problem !== undefined}
        aria-describedby={
          [hint ? `${id}-hint` : "", problem ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined
        }
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {problem && (
        <p id={`${id}-error`} class="field-error">
          {problem}
        </p>
      )}
    </div>
  );
}

// jsonObjectOf is the JSON object text holds, or an Error saying why it
// holds none; what names the text in the message ("The parameters"), and
// example is an object of the kind wanted.
export function jsonObjectOf(text: string, what: string, example = "{}"): Record<string, unknown> | Error {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
    return new Error(`${what} must be a JSON object, such as ${example}.`);
  } catch (err) {
    return new Error(`${what} are not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// Choices is a group of checkboxes for a list member (id is its name in
// the API), with the API's error for it, like Field.
export function Choices<T extends string>(props: {
  id: string;
  legend: string;
  options: { value: T; label: string; disabled?: boolean }[];
  chosen: T[];
  onChange: (chosen: T[]) => void;
  error?: unknown;
  hint?: string;
}) {
  const mine = refused(props.error, props.id);
  return (
    <fieldset
      id={props.id}
      class={mine ? "invalid" : undefined}
      tabIndex={-1}
      aria-describedby={describedBy(props.id, mine !== undefined, props.hint)}
    >
      <legend>{props.legend}</legend>
      {props.options.map((o) => (
        <label class="inline" key={o.value}>
          <input
            type="checkbox"
            value={o.value}
            checked={props.chosen.includes(o.value)}
            disabled={o.disabled}
            onChange={(e) =>
              props.onChange(
                e.currentTarget.checked ? [...props.chosen, o.value] : props.chosen.filter((c) => c !== o.value),
              )
            }
          />
          {o.label}
        </label>
      ))}
      <Notes id={props.id} mine={mine} hint={props.hint} />
    </fieldset>
  );
}

// Group is a fieldset for a member made of several inputs (id is its name
// in the API: "actions", "settings"), with the API's error for anything
// under it, like Field.
export function Group(props: {
  id: string;
  legend: string;
  error?: unknown;
  hint?: string;
  problem?: string;
  children: ComponentChildren;
}) {
  const mine = refused(props.error, props.id);
  const wrong = mine !== undefined || !!props.problem;
  return (
    <fieldset
      id={props.id}
      class={wrong ? "invalid" : undefined}
      tabIndex={-1}
      aria-describedby={describedBy(props.id, wrong, props.hint)}
    >
      <legend>{props.legend}</legend>
      <Notes id={props.id} mine={undefined} hint={props.hint} />
      {props.children}
      <Notes id={props.id} mine={mine} hint={undefined} problem={props.problem} />
    </fieldset>
  );
}

// useFocusRefused focuses the field the API refused, so its error is in
// view and read out.
export function useFocusRefused(error: unknown): void {
  useEffect(() => {
    const bad = fieldOf(error);
    if (bad) document.getElementById(bad)?.focus();
  }, [error]);
}

// DropZone is an area a file may be dropped on (the first of several is
// taken), marked while one is dragged over it; it holds the file input
// that chooses one otherwise.
export function DropZone({
  onDrop,
  children,
}: {
  onDrop: (file: File | undefined) => void;
  children: ComponentChildren;
}) {
  const [dragging, setDragging] = useState(false);
  return (
    <div
      class={dragging ? "dropzone dragging" : "dropzone"}
      onDragOver={(e) => (e.preventDefault(), setDragging(true))}
      onDragLeave={() => setDragging(false)}
      onDrop={(e) => {
        e.preventDefault();
        setDragging(false);
        onDrop(e.dataTransfer?.files[0]);
      }}
    >
      {children}
    </div>
  );
}

// Confirm is a button that asks before doing something that cannot be
// undone; onYes's failure is for the caller to show. Several may be on a
// page (one a row), each question with its own id.
export function Confirm(props: {
  label: ComponentChildren;
  question: ComponentChildren;
  yes: string;
  onYes: () => Promise<void>;
  disabled?: boolean;
  small?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const id = `confirm-${useId()}`;
  if (!asking) {
    return (
      <button
        type="button"
        class={props.small ? "danger small" : "danger"}
        disabled={props.disabled}
        onClick={() => setAsking(true)}
      >
        {props.label}
      </button>
    );
  }
  return (
    <div role="alertdialog" aria-labelledby={id} class="confirm">
      <p id={id}>{props.question}</p>
      <button type="button" class="danger" onClick={() => void props.onYes().finally(() => setAsking(false))}>
        {props.yes}
      </button>
      <button type="button" onClick={() => setAsking(false)} autoFocus>
        Cancel
      </button>
    </div>
  );
}

// Switch is a checkbox drawn as an on/off switch, with the switch role so
// a screen reader says "on" or "off"; label names it, visibly unless
// hideLabel (a table's column already says what it switches).
export function Switch(props: {
  id?: string;
  label: ComponentChildren;
  hideLabel?: boolean;
  checked: boolean;
  disabled?: boolean;
  onChange: (on: boolean) => void;
}) {
  return (
    <label class="switch">
      <input
        id={props.id}
        type="checkbox"
        role="switch"
        checked={props.checked}
        disabled={props.disabled}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
      <span class={props.hideLabel ? "visually-hidden" : undefined}>{props.label}</span>
    </label>
  );
}

// Pager moves between the pages of a list.
export function Pager({ pagination, onPage }: { pagination?: Schemas["Pagination"]; onPage: (page: number) => void }) {
  if (!pagination || pagination.totalItems === 0) return null;
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

// ListTable is a page's list: its load error, a line when it is empty, the
// table of its items (one row each, keyed by rowKey) and the pager.
export function ListTable<T>(props: {
  items: T[] | undefined;
  error: unknown;
  empty: ComponentChildren;
  columns: string[];
  rowKey: (item: T) => string;
  row: (item: T) => ComponentChildren;
  pagination?: Schemas["Pagination"];
  onPage?: (page: number) => void;
}) {
  const { items } = props;
  return (
    <>
      <ErrorBox error={props.error} />
      {items && items.length === 0 && (
        <p class="empty" role="note">
          {props.empty}
        </p>
      )}
      {items && items.length > 0 && (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                {props.columns.map((c) => (
                  <th scope="col" key={c}>
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <Fragment key={props.rowKey(item)}>{props.row(item)}</Fragment>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {props.onPage && <Pager pagination={props.pagination} onPage={props.onPage} />}
    </>
  );
}

// ReadOnlyNote says why a page lists things without the controls that
// change them: the API has refused this key a write.
export function ReadOnlyNote({ what }: { what: string }) {
  return (
    <p class="hint read-only" role="note">
      This API key is read-only: {what} are shown without the controls that change them. Sign in with a write key to
      change them.
    </p>
  );
}

// size formats a count of bytes for people.
export function size(bytes: number): string {
  if (bytes < 1000) return `${bytes} bytes`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  return `${(bytes / 1_000_000).toFixed(2)} MB`;
}

// Relative is a timestamp as relative says it, kept current (every 15 s),
// with the date and time in full as its title.
export function Relative({ ts }: { ts: string }) {
  const now = useClock(true, 15_000);
  return (
    <time dateTime={ts} title={when(ts)}>
      {relative(ts, now)}
    </time>
  );
}

// lines splits a textarea into its non-empty lines.
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

// copyText puts text on the clipboard. The Clipboard API exists on HTTPS
// and localhost pages only, and may refuse (no permission, page not
// focused); then a selected textarea and execCommand still copy, as on
// agentd at a LAN address over plain HTTP.
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    // fall back below
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("The browser refused to copy.");
}

// CopyButton copies text and says so for a moment (in words a screen
// reader announces too).
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const t = setTimeout(() => setState("idle"), 1500);
    return () => clearTimeout(t);
  }, [state]);
  return (
    <button
      type="button"
      class="icon copy"
      aria-live="polite"
      onClick={() =>
        copyText(text).then(
          () => setState("copied"),
          () => setState("failed"),
        )
      }
    >
      {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy"}
      <span class="visually-hidden"> the {what}</span>
    </button>
  );
}

// EmptyState says that a list or page has nothing yet, and what to do
// next (children: a link or a sentence).
export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty" role="note">
      <strong>{title}</strong>
      {children && <p>{children}</p>}
    </div>
  );
}

// RunStatusPill is a run's status as a pill, with a spinner while it runs.
export function RunStatusPill({ status }: { status: Schemas["RunStatus"] }) {
  return (
    <span class={`status run-${status}`}>
      {status === "running" && <span class="spinner" aria-hidden="true" />}
      {statusLabel(status)}
    </span>
  );
}
