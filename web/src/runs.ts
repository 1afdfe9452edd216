// runs.ts: what the run pages, the approvals inbox and the playground
// share about runs, apart from their views: which statuses are final, how
// a run's input and duration read in a list, waitForRun, the loop
// that follows a run until it ends, and the calls that list the runs
// waiting for a decision and decide them.
import { api, call, type Schemas } from "./api";

export type Run = Schemas["Run"];
export type RunStatus = Schemas["RunStatus"];
export type RunSource = Schemas["RunSource"];
export type RequiredAction = Schemas["RequiredAction"];
export type Decision = Schemas["ApprovalDecision"];

// runStatuses are the contract's run statuses, in a run's life order: the
// Record makes a status added to the enum stop the build until it is
// listed here, so the filter offers it.
export const runStatuses = Object.keys({
  queued: 1,
  running: 1,
  requires_action: 1,
  completed: 1,
  failed: 1,
  cancelled: 1,
  interrupted: 1,
  rolled_back: 1,
} satisfies Record<RunStatus, 1>) as RunStatus[];

// runSources are the ways a run's message comes in, as runStatuses.
export const runSources = Object.keys({
  api: 1,
  openai: 1,
  a2a: 1,
  mcp: 1,
  telegram: 1,
  discord: 1,
  twitter: 1,
  schedule: 1,
  agent: 1,
} satisfies Record<RunSource, 1>) as RunSource[];

// strategies are what a message does when its conversation is busy.
export const strategies = Object.keys({
  enqueue: 1,
  reject: 1,
  interrupt: 1,
  rollback: 1,
  merge: 1,
} satisfies Record<Schemas["MultitaskStrategy"], 1>) as Schemas["MultitaskStrategy"][];

// isFinal is whether a run has ended: it changes no more.
export function isFinal(status: RunStatus): boolean {
  return status !== "queued" && status !== "running" && status !== "requires_action";
}

// cancellable is whether Cancel applies to a run in status.
export const cancellable = (status: RunStatus): boolean => !isFinal(status);

// statusLabel is a status in words ("requires_action" → "requires action").
export function statusLabel(status: RunStatus): string {
  return status.replace("_", " ");
}

// cut is text on one line, cut to at most n characters with an ellipsis.
export function cut(text: string, n = 60): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= n ? line : `${line.slice(0, n - 1).trimEnd()}…`;
}

// span formats a length of time in milliseconds for people.
export function span(ms: number): string {
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// duration is how long a run ran (from its last start to its end), or has
// been running so far (marked "so far"); "—" before it started, or when it
// ended without starting (cancelled while queued).
export function duration(run: Pick<Run, "startedAt" | "finishedAt">, now = Date.now()): string {
  if (!run.startedAt) return "—";
  const start = Date.parse(run.startedAt);
  if (run.finishedAt) return span(Date.parse(run.finishedAt) - start);
  return `${span(now - start)} so far`;
}

// runPath is a run page's route.
export function runPath(run: Pick<Run, "agentId" | "id">): string {
  return `/agents/${run.agentId}/runs/${run.id}`;
}

// conversationOf is a run's conversation, its route and who it is with, or
// undefined for a run without one.
export function conversationOf(
  run: Pick<Run, "agentId" | "conversationId" | "roomId" | "userId">,
): { path: string; label: string } | undefined {
  if (!run.conversationId) return undefined;
  return {
    path: `/agents/${run.agentId}/conversations/${run.conversationId}`,
    label: run.roomId ? `room ${run.roomId}` : `with ${run.userId ?? "user"}`,
  };
}

// readRun reads a run, waiting up to wait seconds (1..30) for it to end or
// need an approval when wait is given.
export async function readRun(agentId: string, runId: string, wait?: number, signal?: AbortSignal): Promise<Run> {
  const r = await call(
    api.GET("/agents/{agentId}/runs/{runId}", {
      params: { path: { agentId, runId }, query: wait ? { wait } : {} },
      signal,
      cache: "no-store",
    }),
  );
  return r.data;
}

// approvalPoll is how long waitForRun pauses between reads of a run that
// waits for an approval: ?wait answers such a run at once.
export const approvalPoll = 5000;

// waitForRun follows a run until it ends: it reads it with ?wait=30 again
// and again, calls onRun with each answer, and returns the final one. A run
// that waits for an approval is read every approvalPoll ms instead (at once
// when this tab decides it: see sleep). Aborting signal (its page went
// away) stops it at once: the pending read is aborted, and the promise
// rejects with the signal's reason.
export async function waitForRun(
  run: Pick<Run, "agentId" | "id" | "status">,
  onRun: (run: Run) => void,
  signal?: AbortSignal,
): Promise<Run> {
  let status = run.status;
  for (;;) {
    signal?.throwIfAborted();
    if (status === "requires_action") await sleep(approvalPoll, signal, run.id);
    const next = await readRun(run.agentId, run.id, 30, signal);
    signal?.throwIfAborted();
    onRun(next);
    if (isFinal(next.status)) return next;
    status = next.status;
  }
}

// replyOfRun follows a run until it ends and returns its reply, or throws
// why it has none: what a send answered with its run (202) comes to.
// onRun, when given, sees the run as answered and each read of it (a run
// that waits for a decision shows its calls).
export async function replyOfRun(
  run: Run,
  signal?: AbortSignal,
  onRun: (run: Run) => void = () => {},
): Promise<Schemas["MessageReply"]> {
  onRun(run);
  const last = isFinal(run.status) ? run : await waitForRun(run, onRun, signal);
  if (last.reply && last.status === "completed") return last.reply;
  throw new Error(last.error ? `${last.error.code}: ${last.error.message}` : `The run ended ${last.status}.`);
}

// sleep waits ms, and rejects when signal aborts. Given runId, it ends
// early when this tab decides that run (approvalsEvent), so a follower
// reads the run going on at once rather than up to approvalPoll later.
function sleep(ms: number, signal?: AbortSignal, runId?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const end = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", stop);
      removeEventListener(approvalsEvent, wake);
    };
    const t = setTimeout(() => (end(), resolve()), ms);
    const stop = () => (end(), reject(signal?.reason));
    const wake = (e: Event) => {
      const d = (e as CustomEvent<ApprovalsChange>).detail;
      if (!d.decided || d.runId !== runId) return;
      end();
      resolve();
    };
    signal?.addEventListener("abort", stop, { once: true });
    if (runId) addEventListener(approvalsEvent, wake);
  });
}

// approvalsEvent is fired on window when this tab learns that a run waits
// for a decision (decided false) or decides one (decided true): the
// sidebar's count reads itself again, and a follower of a decided run
// stops pausing.
export const approvalsEvent = "agentd:approvals";

// ApprovalsChange is approvalsEvent's detail.
export type ApprovalsChange = { runId: string; decided: boolean };

// announce fires approvalsEvent.
export function announce(change: ApprovalsChange): void {
  dispatchEvent(new CustomEvent(approvalsEvent, { detail: change }));
}

// listWaiting is a page of the runs of every agent that wait for a
// decision, newest first.
export async function listWaiting(page: number, limit: number, signal?: AbortSignal): Promise<Schemas["RunList"]> {
  const query = { status: "requires_action" as const, page, limit };
  const r = await call(api.GET("/runs", { params: { query }, signal, cache: "no-store" }));
  return r.data;
}

// countWaiting is how many runs of the account wait for a decision.
export async function countWaiting(signal?: AbortSignal): Promise<number> {
  return (await listWaiting(1, 1, signal)).pagination.totalItems;
}

// decide sends the decisions on every call a run waits for, in one
// request as the API requires, and returns the run going on; it announces
// the decision (approvalsEvent).
export async function decide(
  run: Pick<Run, "agentId" | "id">,
  decisions: Decision[],
  signal?: AbortSignal,
): Promise<Run> {
  const r = await call(
    api.POST("/agents/{agentId}/runs/{runId}/approvals", {
      params: { path: { agentId: run.agentId, runId: run.id } },
      body: { decisions },
      signal,
    }),
  );
  announce({ runId: run.id, decided: true });
  return r.data;
}
