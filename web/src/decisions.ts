// decisions.ts: what a decision on a waiting run is made of, apart from
// its view (approvals.tsx): what waits (from a run or a stream's
// requires_action event), each call's draft (its arguments as text, a
// reason, the choice made) and the decisions they make, sent in one
// request (decide, in runs.ts).
import type { StreamEvent } from "./api";
import type { Decision, RequiredAction, Run } from "./runs";
import { jsonObjectOf } from "./ui";

export type WaitingCall = RequiredAction["toolCalls"][number];

// Waiting is a run that waits for decisions, and on what.
export type Waiting = { run: Pick<Run, "id" | "agentId">; action: RequiredAction };

// waitingOf is what run waits for, or undefined when it waits for nothing.
export function waitingOf(run: Run): Waiting | undefined {
  if (run.status !== "requires_action" || !run.requiredAction) return undefined;
  return { run: { id: run.id, agentId: run.agentId }, action: run.requiredAction };
}

// waitingOfEvent is what a stream's requires_action event says waits.
export function waitingOfEvent(agentId: string, ev: Extract<StreamEvent, { type: "requires_action" }>): Waiting {
  return {
    run: { id: ev.runId, agentId },
    action: { type: "approve_tool_calls", toolCalls: ev.toolCalls, expiresAt: ev.expiresAt },
  };
}

export type Choice = "approve" | "deny";

// CallDraft is what a card edits of one waiting call: its arguments as
// text, the reason, and, when a run waits on several calls, the choice
// made so far.
export type CallDraft = { text: string; reason: string; choice?: Choice };

// reasonMax is the API's bound on a decision's reason.
export const reasonMax = 500;

// draftOf is a call's draft before any edit: the model's arguments.
export function draftOf(call: WaitingCall): CallDraft {
  return { text: JSON.stringify(call.arguments, null, 2), reason: "" };
}

// argumentsOf is the arguments a draft gives, or an Error saying why its
// text is not a JSON object.
export function argumentsOf(draft: CallDraft): Record<string, unknown> | Error {
  return jsonObjectOf(draft.text, "The arguments", '{"symbol": "ETH"}');
}

// decisionOf is the decision choice makes on call. An approval carries
// arguments only when they differ from the model's (an edit), a denial
// never (the API refuses them); the reason is sent when there is one. It
// throws when an approval's arguments are not a JSON object.
export function decisionOf(call: WaitingCall, draft: CallDraft, choice: Choice): Decision {
  const out: Decision = { callId: call.id, approve: choice === "approve" };
  if (out.approve) {
    const args = argumentsOf(draft);
    if (args instanceof Error) throw args;
    if (canonical(args) !== canonical(call.arguments)) out.arguments = args;
  }
  const reason = draft.reason.trim();
  if (reason) out.reason = reason.slice(0, reasonMax);
  return out;
}

// decisionsOf is the decisions of a run's calls, one each in call order,
// from their drafts' choices (drafts by call id); undefined while a call
// has no choice or an approved call's arguments are not an object.
export function decisionsOf(calls: WaitingCall[], drafts: Record<string, CallDraft>): Decision[] | undefined {
  const out: Decision[] = [];
  for (const call of calls) {
    const d = drafts[call.id];
    if (!d?.choice || (d.choice === "approve" && argumentsOf(d) instanceof Error)) return undefined;
    out.push(decisionOf(call, d, d.choice));
  }
  return out;
}

// summary says in words what decisions did ("get_price approved", "2
// calls: 1 approved, 1 denied").
export function summary(calls: WaitingCall[], decisions: Decision[]): string {
  if (decisions.length === 1) {
    const name = calls.find((c) => c.id === decisions[0]!.callId)?.name ?? "the call";
    return `${name} ${decisions[0]!.approve ? "approved" : "denied"}`;
  }
  const approved = decisions.filter((d) => d.approve).length;
  return `${decisions.length} calls: ${approved} approved, ${decisions.length - approved} denied`;
}

// canonical is v as JSON with object keys sorted, so that two values that
// differ only in key order compare equal.
function canonical(v: unknown): string {
  return JSON.stringify(v, (_, x: unknown) =>
    typeof x === "object" && x !== null && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}
