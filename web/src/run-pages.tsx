// run-pages.tsx: runs, the work that answers each message: the account's list
// (#/runs) and an agent's (its Runs tab) made by one RunList, a run's page
// (kept fresh while it goes on, with Cancel, and the card deciding the
// calls it waits for), and the overview's card.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call } from "./api";
import { ApprovalCard, type Decided, DecidedLine } from "./approvals";
import { TurnView } from "./chat";
import { waitingOf } from "./decisions";
import { useAction, useAgentNames, useQuery, useReadOnly } from "./hooks";
import {
  type Run,
  type RunSource,
  type RunStatus,
  cancellable,
  conversationOf,
  cut,
  duration,
  isFinal,
  readRun,
  runPath,
  runSources,
  runStatuses,
  statusLabel,
  waitForRun,
} from "./runs";
import { usage, usd } from "./money";
import { EmptyState, ErrorBox, ListTable, RunStatusPill, when } from "./ui";

// livePoll is how often a list with runs that have not ended is read again.
const livePoll = 5000;

// RunList is a list of runs, newest first, with filters by status and
// source and pages: the account's (with an Agent column, named by names
// when known), or agentId's only.
export function RunList({
  agentId,
  names,
  status: initialStatus = "",
}: {
  agentId?: string;
  names?: Map<string, string>;
  status?: RunStatus | "";
}) {
  const [page, setPage] = useState(1);
  const [status, setStatus] = useState<RunStatus | "">(initialStatus);
  const [source, setSource] = useState<RunSource | "">("");
  useEffect(() => (setStatus(initialStatus), setPage(1)), [initialStatus]);
  const list = useQuery(
    (signal) => {
      const query = { page, limit: 20, ...(status ? { status } : {}), ...(source ? { source } : {}) };
      return (
        agentId
          ? call(api.GET("/agents/{agentId}/runs", { params: { path: { agentId }, query }, signal, cache: "no-store" }))
          : call(api.GET("/runs", { params: { query }, signal, cache: "no-store" }))
      ).then((r) => r.data);
    },
    [agentId, page, status, source],
  );
  const filtered = status || source;
  // While a run of the page has not ended, the page is read again now and
  // then, so its statuses and durations move without Refresh.
  const live = list.data?.items.some((r) => !isFinal(r.status)) ?? false;
  useEffect(() => {
    if (!live) return;
    const t = setTimeout(list.reload, livePoll);
    return () => clearTimeout(t);
  }, [live, list.data]);
  return (
    <>
      <form class="filters run-filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select
            id="run-status"
            value={status}
            onChange={(e) => (setStatus(e.currentTarget.value as RunStatus | ""), setPage(1))}
          >
            <option value="">all</option>
            {runStatuses.map((s) => (
              <option key={s} value={s}>
                {statusLabel(s)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source
          <select
            id="run-source"
            value={source}
            onChange={(e) => (setSource(e.currentTarget.value as RunSource | ""), setPage(1))}
          >
            <option value="">all</option>
            {runSources.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <div class="filter-buttons">
          <button type="button" class="quiet" onClick={list.reload} disabled={list.loading}>
            Refresh
          </button>
        </div>
      </form>
      {list.data?.items.length === 0 && !filtered ? (
        <EmptyState title="No runs yet.">
          Every message to an agent is a run: one sent in the playground, through the API (in the background too),
          OpenAI, A2A or MCP, or on Telegram, Discord or X shows here with its status, steps and cost.
        </EmptyState>
      ) : (
        <ListTable
          items={list.data?.items}
          error={list.error}
          empty={`No runs${status ? ` with status “${statusLabel(status)}”` : ""}${source ? ` from ${source}` : ""}.`}
          columns={["Input", "Status", ...(agentId ? [] : ["Agent"]), "Source", "Created", "Duration", "Cost"]}
          rowKey={(r) => r.id}
          row={(r) => (
            <tr data-run={r.id}>
              <td class="title-cell">
                <a href={`#${runPath(r)}`}>{cut(r.input.text) || r.id}</a>
              </td>
              <td>
                <RunStatusPill status={r.status} />
              </td>
              {!agentId && (
                <td>
                  <a href={`#/agents/${r.agentId}/runs`}>{names?.get(r.agentId) ?? r.agentId}</a>
                </td>
              )}
              <td>{r.source}</td>
              <td>{when(r.createdAt)}</td>
              <td>{duration(r)}</td>
              <td>{usd(r.costUsd)}</td>
            </tr>
          )}
          pagination={list.data?.pagination}
          onPage={setPage}
        />
      )}
    </>
  );
}

// RunsPage is the account's runs; status (from the route's ?status=) sets
// the status filter.
export function RunsPage({ status }: { status?: string }) {
  const names = useAgentNames();
  const initial = runStatuses.includes(status as RunStatus) ? (status as RunStatus) : "";
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs</h1>
      <p class="hint">Each message to an agent and the work that answers it, newest first.</p>
      <RunList names={names} status={initial} />
    </section>
  );
}

// AgentRuns is an agent's Runs tab.
export function AgentRuns({ agent }: { agent: Agent }) {
  return (
    <section aria-labelledby="agent-runs-title">
      <h2 id="agent-runs-title">Runs</h2>
      <RunList agentId={agent.id} />
    </section>
  );
}

// useRun reads a run and, while it is not final, reads it again with
// ?wait=30 until it is; leaving the page aborts the wait.
function useRun(agentId: string, runId: string) {
  const [run, setRun] = useState<Run>();
  const [error, setError] = useState<unknown>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    setError(undefined);
    (async () => {
      const first = await readRun(agentId, runId, undefined, abort.signal);
      if (abort.signal.aborted) return;
      setRun(first);
      if (!isFinal(first.status)) await waitForRun(first, setRun, abort.signal);
    })().catch((err: unknown) => abort.signal.aborted || setError(err));
    return () => abort.abort();
  }, [agentId, runId, version]);
  return { run, error, setRun, follow: () => setVersion((v) => v + 1) };
}

// RunPage is one run of agent: what it was asked, how it went, its reply
// with its tool steps, and Cancel while it has not ended.
export function RunPage({ agent, runId }: { agent: Agent; runId: string }) {
  const { run, error, setRun, follow } = useRun(agent.id, runId);
  const cancelling = useAction();
  const readOnly = useReadOnly();
  const path = { agentId: agent.id, runId };
  // The run's follower reads it again at once when the card decides it.
  const waiting = run && waitingOf(run);
  const [decided, setDecided] = useState<Decided>();

  const cancel = () =>
    cancelling.run(async () => {
      try {
        const r = await call(api.POST("/agents/{agentId}/runs/{runId}/cancel", { params: { path } }));
        setRun(r.data);
      } catch (err) {
        // It ended meanwhile: show how, rather than an error.
        if (!(err instanceof ApiFailure && err.code === "RUN_FINISHED")) throw err;
      }
      const r = await readRun(agent.id, runId, 5);
      setRun(r);
      if (!isFinal(r.status)) follow();
    });

  return (
    <section aria-labelledby="run-title" class="run-page">
      <p>
        <a href={`#/agents/${agent.id}/runs`}>← All runs of {agent.name}</a>
      </p>
      <div class="title-row">
        <h2 id="run-title">Run</h2>
        {run && <RunStatusPill status={run.status} />}
      </div>
      <p class="meta">
        <code>{runId}</code>
      </p>
      <ErrorBox error={cancelling.error ?? error} />
      {error !== undefined && run && !isFinal(run.status) && (
        <button type="button" class="quiet" onClick={follow}>
          Follow the run again
        </button>
      )}
      {!run && !error && <p aria-busy="true">Loading…</p>}
      {run && (
        <>
          {cancellable(run.status) && !readOnly && (
            <div class="actions">
              <button type="button" class="danger cancel-run" disabled={cancelling.busy} onClick={() => void cancel()}>
                {cancelling.busy ? "Cancelling…" : "Cancel run"}
              </button>
            </div>
          )}
          <RunFacts agent={agent} run={run} />
          {run.error && (
            <div class="error run-error" role="note">
              <strong>{run.error.code}</strong>: {run.error.message}
            </div>
          )}
          {waiting && (
            <ApprovalCard
              waiting={waiting}
              onDecided={(next, what) => (setRun(next), setDecided({ run: next, what }))}
            />
          )}
          <DecidedLine done={decided} />
          <AskedAgents run={run} />
          <h3>Message and reply</h3>
          <ol class="transcript">
            <TurnView
              turn={{ key: 0, role: "user", text: run.input.text }}
              who={run.userId ?? run.roomId ?? "user"}
              at={run.createdAt}
            />
            {run.reply && (
              <TurnView
                turn={{
                  key: 1,
                  role: "agent",
                  text: run.reply.response,
                  metadata: run.reply.metadata,
                  messageId: run.reply.messageId,
                  tools: run.reply.metadata.toolCalls,
                  stopped: isFinal(run.status) && run.status !== "completed",
                }}
                who={agent.name}
                at={run.reply.timestamp}
              />
            )}
          </ol>
          {!run.reply && !isFinal(run.status) && (
            <p class="hint" role="status">
              <span class="spinner" aria-hidden="true" />
              {run.status === "queued"
                ? "Queued: it starts when the runs before it in its conversation have ended."
                : run.status === "requires_action"
                  ? "Waiting for an approval."
                  : "Running: the reply shows here when it is done."}
            </p>
          )}
          {!run.reply && isFinal(run.status) && <p class="hint">No reply was stored.</p>}
        </>
      )}
    </section>
  );
}

// AskedAgents is the run's part of its tree: the agents it asked with
// ask_agent, each with its status and cost (a local one linked to its run,
// a remote one by its name); nothing when it asked none.
function AskedAgents({ run }: { run: Run }) {
  const names = useAgentNames();
  const children = run.children ?? [];
  if (children.length === 0) return null;
  return (
    <>
      <h3>Agents it asked</h3>
      <p class="hint">The run's cost includes theirs.</p>
      <ListTable
        items={children.map((c, i) => ({ ...c, key: c.id ?? `remote-${i}` }))}
        error={undefined}
        empty=""
        columns={["Agent", "Run", "Status", "Cost"]}
        rowKey={(c) => c.key}
        row={(c) => (
          <tr data-child={c.key}>
            <td>{c.agentId ? (names?.get(c.agentId) ?? c.agentId) : `${c.agent ?? "?"} (remote)`}</td>
            <td>
              {c.id && c.agentId ? (
                <a href={`#/agents/${c.agentId}/runs/${c.id}`}>
                  <code>{c.id}</code>
                </a>
              ) : (
                "—"
              )}
            </td>
            <td>
              <RunStatusPill status={c.status} />
            </td>
            <td>{usd(c.costUsd)}</td>
          </tr>
        )}
      />
    </>
  );
}

// RunFacts are a run's status, times, attempts, strategy, source and
// links to what it belongs to.
function RunFacts({ agent, run }: { agent: Agent; run: Run }) {
  const facts: [string, ComponentChildren][] = [
    ["Source", run.source],
    ["Strategy", run.multitaskStrategy],
    ["Attempts", run.attempts],
    ["Created", when(run.createdAt)],
    ["Started", run.startedAt ? when(run.startedAt) : "not yet"],
    ["Finished", run.finishedAt ? when(run.finishedAt) : "not yet"],
    ["Duration", duration(run)],
  ];
  // With the runs it asked through ask_agent; tokens are its own.
  facts.push(["Cost", usage(run)]);
  const conversation = conversationOf(run);
  if (conversation) {
    facts.push([
      "Conversation",
      <a key="c" href={`#${conversation.path}`}>
        {conversation.label}
      </a>,
    ]);
  }
  // A run an ask_agent made has the asking agent's id as its userId, so
  // the parent is linked under that agent.
  if (run.parentRunId) {
    const asker = run.source === "agent" && run.userId ? run.userId : agent.id;
    facts.push([
      "Asked by",
      <a key="p" href={`#/agents/${asker}/runs/${run.parentRunId}`}>
        <code>{run.parentRunId}</code>
      </a>,
    ]);
  }
  if (run.scheduleId) {
    facts.push([
      "Schedule",
      <a key="s" href={`#/agents/${run.agentId}/schedules`}>
        <code>{run.scheduleId}</code>
      </a>,
    ]);
  }
  return (
    <dl class="facts run-facts">
      {facts.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

// RunsCard is the overview's card of runs: those waiting for an approval
// and those failed, counted, and the latest failed ones; names are the
// agents' names known to the overview.
export function RunsCard({ names }: { names: Map<string, string> }) {
  const runs = useQuery(async (signal) => {
    const page = (status: RunStatus, limit = 1) =>
      call(api.GET("/runs", { params: { query: { status, limit } }, signal, cache: "no-store" })).then((r) => r.data);
    // Two requests only: the account's 60 a minute are shared by every
    // card of the overview.
    const [waiting, failed] = await Promise.all([page("requires_action"), page("failed", 5)]);
    // Waiting runs are decided in the inbox; failed ones are listed.
    return {
      counts: [
        ["requires_action", "wait for a decision", waiting.pagination.totalItems, "#/approvals"],
        ["failed", "failed", failed.pagination.totalItems, "#/runs?status=failed"],
      ] as const,
      failed: failed.items,
    };
  }, []);
  const d = runs.data;
  return (
    <section class="card" aria-labelledby="runs-card-title">
      <div class="title-row">
        <h2 id="runs-card-title">Runs</h2>
        <a href="#/runs">All runs</a>
      </div>
      <ErrorBox error={runs.error} />
      {d && (
        <dl class="totals run-totals">
          {d.counts.map(([status, label, n, href]) => (
            <div key={status}>
              <dt>{label}</dt>
              <dd>
                <a href={href}>{n}</a>
              </dd>
            </div>
          ))}
        </dl>
      )}
      {d && d.failed.length === 0 && <p class="hint">No failed runs.</p>}
      {d && d.failed.length > 0 && (
        <ul class="plain-list failed-runs">
          {d.failed.map((r) => (
            <li key={r.id}>
              <a href={`#${runPath(r)}`}>{cut(r.input.text, 48) || r.id}</a>
              <div class="meta">
                {names.get(r.agentId) ?? r.agentId} · {r.error?.code ?? "failed"} · {when(r.createdAt)}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
