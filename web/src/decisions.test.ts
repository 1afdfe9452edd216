// decisions.test.ts: deciding a waiting run's calls without a server: what
// waits (from a run or a stream event), the decisions each call's draft
// makes (edited arguments only when edited, never on a denial, a reason
// when given), the one request that sends them, the queries of waiting
// runs, and the follower of a run that a decision in this tab wakes. fetch
// is answered here (src/test-setup.ts stubs it).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiFailure, session } from "./api";
import {
  type CallDraft,
  type WaitingCall,
  argumentsOf,
  decisionOf,
  decisionsOf,
  draftOf,
  summary,
  waitingOf,
  waitingOfEvent,
} from "./decisions";
import {
  type ApprovalsChange,
  type Run,
  approvalPoll,
  approvalsEvent,
  countWaiting,
  decide,
  listWaiting,
  replyOfRun,
  waitForRun,
} from "./runs";

const fetchMock = vi.mocked(fetch);
let requests: Request[];

// answer answers each request with the next of bodies, as a success
// envelope (or an error envelope when a body is an [status, error] pair);
// a request beyond them fails the test.
function answer(...bodies: unknown[]): void {
  const queue = [...bodies];
  fetchMock.mockImplementation(async (input) => {
    const request = input as Request;
    requests.push(request);
    if (!queue.length) throw new Error(`unexpected request ${request.method} ${request.url}`);
    const next = queue.shift();
    const [status, body] = Array.isArray(next) ? next : [200, { success: true, data: next }];
    return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  });
}

const price: WaitingCall = { id: "call_1", name: "get_price", arguments: { symbol: "SOL", currency: "USD" } };
const mail: WaitingCall = { id: "call_2", name: "send_mail", arguments: { to: "ann@example.com" } };
const action = { type: "approve_tool_calls" as const, toolCalls: [price, mail], expiresAt: "2026-01-02T00:00:00Z" };

function run(status: Run["status"], extra: Partial<Run> = {}): Run {
  return {
    id: "run_1",
    agentId: "agent_1",
    conversationId: "conv_1",
    userId: "ann",
    roomId: null,
    source: "api",
    status,
    input: { text: "price of SOL?" },
    messageId: "msg_1",
    reply: null,
    requiredAction: status === "requires_action" ? action : null,
    error: null,
    parentRunId: null,
    scheduleId: null,
    multitaskStrategy: "enqueue",
    attempts: 1,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    createdAt: "2026-01-01T00:00:00Z",
    startedAt: null,
    finishedAt: null,
    ...extra,
  };
}

beforeEach(() => {
  requests = [];
  session.signIn("agk_test");
});

afterEach(() => {
  vi.useRealTimers();
  fetchMock.mockReset();
});

describe("what waits", () => {
  it("is a waiting run's required action, and nothing of a run that goes on", () => {
    expect(waitingOf(run("requires_action"))).toEqual({ run: { id: "run_1", agentId: "agent_1" }, action });
    expect(waitingOf(run("running"))).toBeUndefined();
    expect(waitingOf(run("requires_action", { requiredAction: null }))).toBeUndefined();
  });

  it("is what a stream's requires_action event names, for the stream's agent", () => {
    const ev = { type: "requires_action" as const, runId: "run_9", toolCalls: [price], expiresAt: action.expiresAt };
    expect(waitingOfEvent("agent_1", ev)).toEqual({
      run: { id: "run_9", agentId: "agent_1" },
      action: { type: "approve_tool_calls", toolCalls: [price], expiresAt: action.expiresAt },
    });
  });
});

describe("a call's draft", () => {
  it("starts from the model's arguments, indented", () => {
    expect(draftOf(price)).toEqual({ text: '{\n  "symbol": "SOL",\n  "currency": "USD"\n}', reason: "" });
    expect(argumentsOf(draftOf(price))).toEqual(price.arguments);
  });

  it("says why arguments that are not a JSON object are refused", () => {
    expect(String(argumentsOf({ text: '{"symbol": ', reason: "" }))).toContain("The arguments are not valid JSON");
    expect(String(argumentsOf({ text: '["SOL"]', reason: "" }))).toContain("The arguments must be a JSON object");
    expect(String(argumentsOf({ text: "null", reason: "" }))).toContain("must be a JSON object");
  });
});

describe("a decision", () => {
  const edited = (text: string, reason = ""): CallDraft => ({ text, reason });

  it("approves without arguments when they were not edited, key order and layout aside", () => {
    expect(decisionOf(price, draftOf(price), "approve")).toEqual({ callId: "call_1", approve: true });
    expect(decisionOf(price, edited('{"currency":"USD","symbol":"SOL"}'), "approve")).toEqual({
      callId: "call_1",
      approve: true,
    });
  });

  it("approves with the edited arguments and the reason, trimmed", () => {
    expect(decisionOf(price, edited('{"symbol": "ETH"}', "  ETH instead "), "approve")).toEqual({
      callId: "call_1",
      approve: true,
      arguments: { symbol: "ETH" },
      reason: "ETH instead",
    });
  });

  it("denies without arguments, even edited or broken ones (the API refuses them)", () => {
    expect(decisionOf(price, edited('{"symbol": "ETH"}', "not today"), "deny")).toEqual({
      callId: "call_1",
      approve: false,
      reason: "not today",
    });
    expect(decisionOf(price, edited("{oops"), "deny")).toEqual({ callId: "call_1", approve: false });
  });

  it("cuts a reason to the API's 500 characters", () => {
    expect(decisionOf(price, edited(draftOf(price).text, "x".repeat(600)), "deny").reason).toHaveLength(500);
  });

  it("refuses to approve arguments that are not an object", () => {
    expect(() => decisionOf(price, edited("[1]"), "approve")).toThrow("must be a JSON object");
  });
});

describe("the decisions of a run waiting on several calls", () => {
  it("are none until every call has a choice, then one each in call order", () => {
    const drafts: Record<string, CallDraft> = { call_2: { ...draftOf(mail), choice: "deny" } };
    expect(decisionsOf([price, mail], drafts)).toBeUndefined();
    drafts.call_1 = { text: '{"symbol": "ETH"}', reason: "", choice: "approve" };
    expect(decisionsOf([price, mail], drafts)).toEqual([
      { callId: "call_1", approve: true, arguments: { symbol: "ETH" } },
      { callId: "call_2", approve: false },
    ]);
  });

  it("are none while an approved call's arguments are broken", () => {
    const drafts: Record<string, CallDraft> = {
      call_1: { text: "{", reason: "", choice: "approve" },
      call_2: { ...draftOf(mail), choice: "approve" },
    };
    expect(decisionsOf([price, mail], drafts)).toBeUndefined();
  });

  it("are summed up in words", () => {
    expect(summary([price], [{ callId: "call_1", approve: true }])).toBe("get_price approved");
    expect(summary([price], [{ callId: "call_1", approve: false }])).toBe("get_price denied");
    expect(
      summary(
        [price, mail],
        [
          { callId: "call_1", approve: true },
          { callId: "call_2", approve: false },
        ],
      ),
    ).toBe("2 calls: 1 approved, 1 denied");
  });
});

describe("sending decisions", () => {
  it("posts every decision in one request and answers the run going on, announced", async () => {
    answer(run("queued"));
    const seen: ApprovalsChange[] = [];
    const on = (e: Event) => seen.push((e as CustomEvent<ApprovalsChange>).detail);
    addEventListener(approvalsEvent, on);
    try {
      const decisions = [
        { callId: "call_1", approve: true, arguments: { symbol: "ETH" } },
        { callId: "call_2", approve: false, reason: "no mail" },
      ];
      const next = await decide({ agentId: "agent_1", id: "run_1" }, decisions);
      expect(next.status).toBe("queued");
      expect(requests).toHaveLength(1);
      expect(requests[0]!.method).toBe("POST");
      expect(new URL(requests[0]!.url).pathname).toBe("/v1/agents/agent_1/runs/run_1/approvals");
      expect(requests[0]!.headers.get("Authorization")).toBe("Bearer agk_test");
      expect(await requests[0]!.json()).toEqual({ decisions });
      expect(seen).toEqual([{ runId: "run_1", decided: true }]);
    } finally {
      removeEventListener(approvalsEvent, on);
    }
  });

  it("throws the API's refusal, announcing nothing: a run decided elsewhere is RUN_NOT_WAITING", async () => {
    answer([
      409,
      {
        success: false,
        error: { code: "RUN_NOT_WAITING", message: "The run is not waiting.", details: { status: "completed" } },
      },
    ]);
    const on = vi.fn();
    addEventListener(approvalsEvent, on);
    try {
      const err = await decide({ agentId: "agent_1", id: "run_1" }, [{ callId: "call_1", approve: true }]).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiFailure);
      expect((err as ApiFailure).code).toBe("RUN_NOT_WAITING");
      expect((err as ApiFailure).details.status).toBe("completed");
      expect(on).not.toHaveBeenCalled();
    } finally {
      removeEventListener(approvalsEvent, on);
    }
  });

  it("names the refused arguments of a 400 by their decision", async () => {
    answer([
      400,
      {
        success: false,
        error: { code: "VALIDATION_ERROR", message: "Invalid.", details: { field: "decisions[0].arguments" } },
      },
    ]);
    const err = await decide({ agentId: "agent_1", id: "run_1" }, [{ callId: "call_1", approve: true }]).catch(
      (e: unknown) => e,
    );
    expect((err as ApiFailure).field).toBe("decisions[0].arguments");
  });
});

describe("the waiting runs", () => {
  it("are listed from every agent with status requires_action, past the browser's cache", async () => {
    answer({ items: [run("requires_action")], pagination: { currentPage: 2, totalPages: 2, totalItems: 21 } });
    const page = await listWaiting(2, 20);
    expect(page.items[0]!.requiredAction?.toolCalls).toHaveLength(2);
    const url = new URL(requests[0]!.url);
    expect(url.pathname).toBe("/v1/runs");
    expect(Object.fromEntries(url.searchParams)).toEqual({ status: "requires_action", page: "2", limit: "20" });
    expect(requests[0]!.cache).toBe("no-store");
  });

  it("are counted with a page of one", async () => {
    answer({ items: [run("requires_action")], pagination: { currentPage: 1, totalPages: 3, totalItems: 3 } });
    expect(await countWaiting()).toBe(3);
    expect(new URL(requests[0]!.url).searchParams.get("limit")).toBe("1");
  });
});

describe("following a waiting run", () => {
  it("reads it at once when this tab decides it, rather than a pause later", async () => {
    vi.useFakeTimers();
    answer(run("requires_action"), run("queued"), run("completed"));
    const done = waitForRun(run("running"), () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(1);
    // Another run's decision does not wake it.
    dispatchEvent(new CustomEvent(approvalsEvent, { detail: { runId: "run_2", decided: true } }));
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(1);
    await decide({ agentId: "agent_1", id: "run_1" }, [{ callId: "call_1", approve: true }]);
    await vi.advanceTimersByTimeAsync(0);
    expect((await done).status).toBe("completed");
    // The decision, then the reads: no pause of approvalPoll between.
    expect(requests.map((r) => new URL(r.url).pathname)).toEqual([
      "/v1/agents/agent_1/runs/run_1",
      "/v1/agents/agent_1/runs/run_1/approvals",
      "/v1/agents/agent_1/runs/run_1",
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("still pauses approvalPoll when nothing is decided here", async () => {
    vi.useFakeTimers();
    answer(run("requires_action"), run("completed"));
    const done = waitForRun(run("running"), () => {});
    await vi.advanceTimersByTimeAsync(approvalPoll - 1);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect((await done).status).toBe("completed");
  });

  it("shows a 202's waiting run before its first read, then each read", async () => {
    vi.useFakeTimers();
    const reply = {
      messageId: "msg_1",
      agentId: "agent_1",
      response: "ETH is at 142.",
      timestamp: "2026-01-01T00:00:05Z",
    };
    answer(
      run("completed", {
        reply: {
          ...reply,
          metadata: { tokensUsed: 1, inputTokens: 1, outputTokens: 0, costUsd: 0, responseTime: 1, model: "m" },
        },
      }),
    );
    const seen: string[] = [];
    const got = replyOfRun(run("requires_action"), undefined, (r) => seen.push(r.status));
    expect(seen).toEqual(["requires_action"]);
    await vi.advanceTimersByTimeAsync(approvalPoll);
    expect((await got).response).toBe("ETH is at 142.");
    expect(seen).toEqual(["requires_action", "completed"]);
  });
});
