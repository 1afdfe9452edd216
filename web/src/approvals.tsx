// approvals.tsx: tool calls that wait for a person. ApprovalCard decides a
// run's calls (in the inbox, inline in the chat whose run waits, and on
// the run's page); ApprovalsPage is the inbox of every agent's waiting
// runs; useWaitingCount is the sidebar's count; ApprovalNote is the
// decision as a tool call shows it afterwards.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure, type Schemas } from "./api";
import {
  type CallDraft,
  type Choice,
  type Waiting,
  type WaitingCall,
  argumentsOf,
  decisionOf,
  decisionsOf,
  draftOf,
  reasonMax,
  summary,
  waitingOf,
} from "./decisions";
import { useAction, useAgentNames, useQuery, useReadOnly } from "./hooks";
import {
  type Decision,
  type Run,
  approvalsEvent,
  conversationOf,
  countWaiting,
  cut,
  decide,
  listWaiting,
  runPath,
} from "./runs";
import { EmptyState, ErrorBox, JsonArea, Pager, Relative, TextField, when } from "./ui";

// ApprovalCard shows what a run waits for and sends the decisions on all
// its calls in one request, as the API requires: a run waiting on one call
// is decided with one press of Approve or Deny; on several, each call's
// press marks its choice and "Send decisions" sends them all. Each call's
// arguments may be edited (Approve waits for valid JSON) and a reason
// given. onDecided gets the run going on and what was decided; children
// (the inbox's context of the run) show under the title; level is the
// title's heading level.
export function ApprovalCard(props: {
  waiting: Waiting;
  onDecided?: (run: Run, what: string) => void;
  level?: 2 | 3;
  children?: ComponentChildren;
}) {
  const { run, action } = props.waiting;
  const calls = action.toolCalls;
  const several = calls.length > 1;
  const readOnly = useReadOnly();
  const sending = useAction();
  // pending is the press being sent on a run waiting on one call.
  const [pending, setPending] = useState<Choice>();
  const [drafts, setDrafts] = useState<Record<string, CallDraft>>({});
  const draft = (c: WaitingCall) => drafts[c.id] ?? draftOf(c);
  const setDraft = (c: WaitingCall, patch: Partial<CallDraft>) =>
    setDrafts((ds) => ({ ...ds, [c.id]: { ...(ds[c.id] ?? draftOf(c)), ...patch } }));

  const send = (decisions: Decision[]) =>
    sending.run(async () => {
      const next = await decide(run, decisions);
      props.onDecided?.(next, summary(calls, decisions));
    });
  const press = (c: WaitingCall, choice: Choice) => {
    if (several) return setDraft(c, { choice });
    setPending(choice);
    void send([decisionOf(c, draft(c), choice)]).finally(() => setPending(undefined));
  };
  const all = several ? decisionsOf(calls, Object.fromEntries(calls.map((c) => [c.id, draft(c)]))) : undefined;
  const chosen = calls.filter((c) => draft(c).choice).length;
  const H = props.level === 2 ? "h2" : "h3";
  const base = `approval-${run.id}`;
  const expired = Date.parse(action.expiresAt) <= Date.now();

  return (
    <section class="approval" aria-labelledby={`${base}-title`} data-run={run.id}>
      <div class="title-row">
        <H id={`${base}-title`}>
          {several ? `${calls.length} tool calls wait for a decision` : `${calls[0]?.name} waits for a decision`}
        </H>
        <span class="meta expiry">
          {expired ? "Expired" : "Expires"} <Relative ts={action.expiresAt} />
          {expired ? ": being denied" : ", then denied"}
        </span>
      </div>
      {props.children}
      <ol class="approval-calls">
        {calls.map((c, i) => (
          <CallDecision
            key={c.id}
            id={`${base}-${i}`}
            call={c}
            draft={draft(c)}
            onDraft={(patch) => setDraft(c, patch)}
            // A 400 naming this call's arguments (the API's own check).
            refused={
              sending.error instanceof ApiFailure && sending.error.field === `decisions[${i}].arguments`
                ? (sending.error.details.reason ?? sending.error.message)
                : undefined
            }
            readOnly={readOnly}
            several={several}
            busy={sending.busy}
            pending={pending}
            onPress={(choice) => press(c, choice)}
          />
        ))}
      </ol>
      {several && !readOnly && (
        <div class="decide-all">
          <button type="button" class="send-decisions" disabled={!all || sending.busy} onClick={() => all && send(all)}>
            {sending.busy ? "Sending…" : `Send ${calls.length} decisions`}
          </button>
          <span class="hint" role="status">
            {chosen} of {calls.length} decided: the run goes on once all are sent.
          </span>
        </div>
      )}
      <ErrorBox error={sending.error} />
    </section>
  );
}

// CallDecision is one waiting call of a card: its name, its arguments to
// edit, a reason, and Approve and Deny (none for a read-only key).
function CallDecision(props: {
  id: string;
  call: WaitingCall;
  draft: CallDraft;
  onDraft: (patch: Partial<CallDraft>) => void;
  refused?: string;
  readOnly: boolean;
  several: boolean;
  busy: boolean;
  pending?: Choice;
  onPress: (choice: Choice) => void;
}) {
  const { id, call: c, draft: d, several, busy } = props;
  if (props.readOnly) {
    return (
      <li class="approval-call" data-tool={c.name}>
        <code class="tool-name">{c.name}</code>
        <pre class="json tool-args">{JSON.stringify(c.arguments, null, 2)}</pre>
        <p class="hint">This API key is read-only: sign in with a write key to decide.</p>
      </li>
    );
  }
  const args = argumentsOf(d);
  const problem = props.refused ?? (args instanceof Error ? args.message : undefined);
  const rows = Math.max(2, Math.min(10, d.text.split("\n").length));
  // On several calls a press marks a choice: the chosen button is solid.
  const look = (choice: Choice, solid: string) => (!several || d.choice === choice ? solid : "quiet");
  return (
    <li class={`approval-call${d.choice ? ` chosen-${d.choice}` : ""}`} data-tool={c.name} data-call={c.id}>
      <code class="tool-name">{c.name}</code>
      <div class="approval-fields">
        <JsonArea
          id={`${id}-arguments`}
          label="Arguments (JSON)"
          hint="Edit them to run the call with others."
          problem={problem}
          rows={rows}
          value={d.text}
          onValue={(text) => props.onDraft({ text })}
        />
        <div>
          <TextField
            id={`${id}-reason`}
            label="Reason (optional)"
            hint="A denial's reason is what the model is told."
            maxLength={reasonMax}
            value={d.reason}
            onValue={(reason) => props.onDraft({ reason })}
          />
          <div class="decide" role="group" aria-label={`Decision on ${c.name}`}>
            <button
              type="button"
              class={`${look("approve", "")} approve`}
              disabled={busy || args instanceof Error}
              aria-pressed={several ? d.choice === "approve" : undefined}
              aria-describedby={args instanceof Error ? `${id}-approve-hint` : undefined}
              onClick={() => props.onPress("approve")}
            >
              {props.pending === "approve" ? "Approving…" : "Approve"}
            </button>
            <button
              type="button"
              class={`${look("deny", "danger")} deny`}
              disabled={busy}
              aria-pressed={several ? d.choice === "deny" : undefined}
              onClick={() => props.onPress("deny")}
            >
              {props.pending === "deny" ? "Denying…" : "Deny"}
            </button>
            {args instanceof Error && (
              <small id={`${id}-approve-hint`} class="hint">
                Approve waits for arguments that are a JSON object.
              </small>
            )}
          </div>
        </div>
      </div>
    </li>
  );
}

// inboxPoll is how often the inbox reads its list again, and inboxPage how
// many runs a page of it holds.
const inboxPoll = 15_000;
const inboxPage = 20;

// ApprovalsPage is the inbox: the runs of every agent that wait for a
// decision, newest first, each a card with its agent, conversation and
// message. A decided run leaves the list, and a line says what was done.
export function ApprovalsPage() {
  const names = useAgentNames();
  const [page, setPage] = useState(1);
  const list = useQuery((signal) => listWaiting(page, inboxPage, signal), [page]);
  const [done, setDone] = useState<Decided>();
  useEffect(() => {
    const t = setTimeout(list.reload, inboxPoll);
    return () => clearTimeout(t);
  }, [list.data]);

  const decided = (run: Run, what: string) => {
    setDone({ run, what });
    if (list.data) list.setData({ ...list.data, items: list.data.items.filter((r) => r.id !== run.id) });
    list.reload();
  };
  const items = list.data?.items;
  return (
    <section aria-labelledby="approvals-title" class="approvals">
      <div class="title-row">
        <h1 id="approvals-title">Approvals</h1>
        <button type="button" class="quiet" onClick={list.reload} disabled={list.loading}>
          Refresh
        </button>
      </div>
      <p class="hint">
        Tool calls of every agent that wait for a person, newest first. A run goes on once all its calls are decided; a
        call still waiting at its expiry is denied.
      </p>
      <DecidedLine done={done} follow />
      <ErrorBox error={list.error} />
      {items?.length === 0 && (
        <EmptyState title="Nothing waits for a decision.">
          A call waits here when its action or MCP server asks a person first (“Ask a person first” in the agent's
          Settings). It shows in the chat that made it and on its run's page too.
        </EmptyState>
      )}
      {items && items.length > 0 && (
        <ol class="approval-list">
          {items.map((r) => {
            const waiting = waitingOf(r);
            return (
              waiting && (
                <li key={r.id}>
                  <ApprovalCard waiting={waiting} level={2} onDecided={decided}>
                    <RunContext run={r} agent={names?.get(r.agentId)} />
                  </ApprovalCard>
                </li>
              )
            );
          })}
        </ol>
      )}
      <Pager pagination={list.data?.pagination} onPage={setPage} />
    </section>
  );
}

// Decided is what a card sent: the run going on, and the decisions in
// words.
export type Decided = { run: Run; what: string };

// DecidedLine says what a card sent once the card has gone, and takes the
// focus its pressed button had, so the keyboard does not start over at the
// page's top; follow adds a link to the run's page.
export function DecidedLine({ done, follow }: { done?: Decided; follow?: boolean }) {
  const line = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (done) line.current?.focus();
  }, [done]);
  return (
    <p class="ok decided-line" role="status" tabIndex={-1} ref={line}>
      {done && (
        <>
          Sent: {done.what}; the run goes on.
          {follow && (
            <>
              {" "}
              <a href={`#${runPath(done.run)}`}>Follow it</a>
            </>
          )}
        </>
      )}
    </p>
  );
}

// RunContext is what the inbox shows of a waiting run: the message that
// started it, its agent (named when known), conversation, source and age.
function RunContext({ run, agent }: { run: Run; agent?: string }) {
  const conversation = conversationOf(run);
  return (
    <>
      <blockquote class="approval-input">
        <p class="text">{cut(run.input.text, 400)}</p>
      </blockquote>
      <p class="meta approval-context">
        <a href={`#/agents/${run.agentId}/runs`}>{agent ?? run.agentId}</a>
        {conversation && (
          <>
            {" · "}
            <a href={`#${conversation.path}`}>{conversation.label}</a>
          </>
        )}
        {` · from ${run.source} · `}
        <a href={`#${runPath(run)}`}>
          run asked <Relative ts={run.createdAt} />
        </a>
      </p>
    </>
  );
}

// countPoll is how often the sidebar's count is read again, and
// countFresh how old a count may be when one moves to another page.
const countPoll = 30_000;
const countFresh = 10_000;

// useWaitingCount is how many runs wait for a decision, for the sidebar:
// read when signed in, every countPoll ms, on moving to another page when
// older than countFresh, and whenever this tab learns that a run waits or
// was decided (approvalsEvent). A failed read keeps the last count.
export function useWaitingCount(on: boolean): number | undefined {
  const [count, setCount] = useState<number>();
  const [version, setVersion] = useState(0);
  const readAt = useRef(0);
  useEffect(() => {
    if (!on) return;
    const again = () => setVersion((v) => v + 1);
    const moved = () => Date.now() - readAt.current > countFresh && again();
    const t = setInterval(again, countPoll);
    addEventListener(approvalsEvent, again);
    addEventListener("hashchange", moved);
    return () => {
      clearInterval(t);
      removeEventListener(approvalsEvent, again);
      removeEventListener("hashchange", moved);
    };
  }, [on]);
  useEffect(() => {
    if (!on) return;
    const abort = new AbortController();
    readAt.current = Date.now();
    countWaiting(abort.signal).then(setCount, () => {});
    return () => abort.abort();
  }, [on, version]);
  return on ? count : undefined;
}

// ApprovalNote is the decision on a tool call that waited: approved or
// denied, by whom (the key's prefix, a platform user, or expiry), when,
// and why.
export function ApprovalNote({ approval: a }: { approval: Schemas["ToolCallApproval"] }) {
  const expired = a.by === "expiry";
  const by = a.byName ? `${a.byName} (${a.by})` : a.by;
  return (
    <p class={`approval-note ${a.approved ? "approved" : "denied"}`}>
      <strong>{a.approved ? "Approved" : expired ? "Denied: it expired" : "Denied"}</strong>
      {!expired && (
        <>
          {" "}
          by <code>{by}</code>
        </>
      )}
      {" · "}
      <time dateTime={a.decidedAt}>{when(a.decidedAt)}</time>
      {a.reason && !expired && <span class="reason"> · “{a.reason}”</span>}
    </p>
  );
}
