// runs.test.ts: how a run reads in a list (its input cut, its duration;
// its cost is money.test.ts's) and waitForRun, the loop that follows a run until it ends,
// with fetch answered here (src/test-setup.ts stubs it).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sendInBackground, session } from "./api";
import { type Run, approvalPoll, cut, duration, isFinal, replyOfRun, span, waitForRun } from "./runs";

const fetchMock = vi.mocked(fetch);
let requests: Request[];

function run(status: Run["status"], extra: Partial<Run> = {}): Run {
  return {
    id: "run_1",
    agentId: "agent_1",
    conversationId: "conv_1",
    userId: "ann",
    roomId: null,
    source: "api",
    status,
    input: { text: "Hello" },
    messageId: "msg_1",
    reply: null,
    requiredAction: null,
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

// answerRuns answers each read of the run with the next of runs, as the
// API does; a read beyond them fails the test.
function answerRuns(...runs: Run[]): void {
  const queue = [...runs];
  fetchMock.mockImplementation(async (input) => {
    const request = input as Request;
    requests.push(request);
    const next = queue.shift();
    if (!next) throw new Error(`unexpected request ${request.method} ${request.url}`);
    return new Response(JSON.stringify({ success: true, data: next }), {
      status: 200,
      headers: { "Content-Type": "application/json" },
    });
  });
}

beforeEach(() => {
  requests = [];
  session.signIn("agk_test");
});

afterEach(() => {
  vi.useRealTimers();
  fetchMock.mockReset();
});

describe("a run in a list", () => {
  it("cuts a long input to one line with an ellipsis", () => {
    expect(cut("short")).toBe("short");
    expect(cut("  two\n\nlines  ")).toBe("two lines");
    const long = cut("word ".repeat(30), 20);
    expect(long).toHaveLength(20);
    expect(long.endsWith("…")).toBe(true);
  });

  it("formats spans of time", () => {
    expect(span(420.4)).toBe("420 ms");
    expect(span(4200)).toBe("4.2 s");
    expect(span(192_000)).toBe("3 min 12 s");
    expect(span(7_500_000)).toBe("2 h 5 min");
    expect(span(-5)).toBe("0 ms");
  });

  it("reads a run's duration: none before it starts, so far while it runs", () => {
    expect(duration(run("queued"))).toBe("—");
    const started = { startedAt: "2026-01-01T00:00:01Z" };
    expect(duration(run("completed", { ...started, finishedAt: "2026-01-01T00:00:03.500Z" }))).toBe("2.5 s");
    expect(duration(run("running", started), Date.parse("2026-01-01T00:00:01.250Z"))).toBe("250 ms so far");
    // Cancelled while queued: it never started.
    expect(duration(run("cancelled", { finishedAt: "2026-01-01T00:00:02Z" }))).toBe("—");
  });

  it("knows the final statuses", () => {
    expect(["queued", "running", "requires_action"].map((s) => isFinal(s as Run["status"]))).toEqual([
      false,
      false,
      false,
    ]);
    expect(
      ["completed", "failed", "cancelled", "interrupted", "rolled_back"].every((s) => isFinal(s as Run["status"])),
    ).toBe(true);
  });
});

describe("waitForRun", () => {
  it("reads with ?wait=30 until the run is final, telling each answer", async () => {
    answerRuns(run("running"), run("running"), run("completed"));
    const seen: string[] = [];
    const last = await waitForRun(run("queued"), (r) => seen.push(r.status));
    expect(last.status).toBe("completed");
    expect(seen).toEqual(["running", "running", "completed"]);
    expect(requests).toHaveLength(3);
    for (const r of requests) {
      const url = new URL(r.url);
      expect(url.pathname).toBe("/v1/agents/agent_1/runs/run_1");
      expect(url.searchParams.get("wait")).toBe("30");
    }
  });

  it("stops at a failed run too", async () => {
    answerRuns(run("failed", { error: { code: "MODEL_ERROR", message: "down" } }));
    const last = await waitForRun(run("running"), () => {});
    expect(last.error?.code).toBe("MODEL_ERROR");
    expect(requests).toHaveLength(1);
  });

  it("pauses between reads of a run that waits for an approval", async () => {
    vi.useFakeTimers();
    answerRuns(run("requires_action"), run("completed"));
    const done = waitForRun(run("running"), () => {});
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(approvalPoll - 1);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect((await done).status).toBe("completed");
    expect(requests).toHaveLength(2);
  });

  it("stops at once when its page goes: the pending read aborted, no other made", async () => {
    // The read is held, as ?wait holds it, until the client gives up.
    fetchMock.mockImplementation(async (input) => {
      const request = input as Request;
      requests.push(request);
      return new Promise<Response>((_, reject) =>
        request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true }),
      );
    });
    const unmount = new AbortController();
    const onRun = vi.fn();
    const done = waitForRun(run("running"), onRun, unmount.signal);
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    unmount.abort(new DOMException("left the page", "AbortError"));
    await expect(done).rejects.toThrow("left the page");
    expect(requests[0]!.signal.aborted).toBe(true);
    expect(onRun).not.toHaveBeenCalled();
    await new Promise((r) => setTimeout(r, 10));
    expect(requests).toHaveLength(1);
  });

  it("does not start when already aborted", async () => {
    answerRuns(run("completed"));
    const gone = new AbortController();
    gone.abort(new DOMException("gone", "AbortError"));
    await expect(waitForRun(run("running"), () => {}, gone.signal)).rejects.toThrow("gone");
    expect(requests).toHaveLength(0);
  });
});

describe("replyOfRun", () => {
  const reply = {
    messageId: "msg_1",
    response: "Done.",
    agentId: "agent_1",
    timestamp: "2026-01-01T00:00:01Z",
    metadata: { tokensUsed: 3, inputTokens: 2, outputTokens: 1, costUsd: 0, responseTime: 5, model: "m" },
  };

  it("follows a run a send answered with (202) to its reply", async () => {
    answerRuns(run("running"), run("completed", { reply }));
    expect(await replyOfRun(run("queued"))).toEqual(reply);
    expect(requests).toHaveLength(2);
  });

  it("says why a run ended without a reply", async () => {
    answerRuns(run("failed", { error: { code: "MODEL_ERROR", message: "down" } }));
    await expect(replyOfRun(run("running"))).rejects.toThrow("MODEL_ERROR: down");
    await expect(replyOfRun(run("cancelled"))).rejects.toThrow("The run ended cancelled.");
  });
});

describe("sendInBackground", () => {
  it("sends background: true without stream and returns the 202's run", async () => {
    fetchMock.mockImplementation(async (input) => {
      requests.push(input as Request);
      return new Response(JSON.stringify({ success: true, data: run("queued") }), {
        status: 202,
        headers: { "Content-Type": "application/json", Location: "/v1/agents/agent_1/runs/run_1" },
      });
    });
    const queued = await sendInBackground("agent_1", { text: "Later", stream: true, multitaskStrategy: "merge" });
    expect(queued.status).toBe("queued");
    const body = (await requests[0]!.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ text: "Later", background: true, stream: false, multitaskStrategy: "merge" });
    expect(requests[0]!.headers.get("Idempotency-Key")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("retries a lost answer with the same Idempotency-Key", async () => {
    vi.useFakeTimers();
    let calls = 0;
    fetchMock.mockImplementation(async (input) => {
      requests.push(input as Request);
      if (calls++ === 0) throw new TypeError("fetch failed");
      return new Response(JSON.stringify({ success: true, data: run("running") }), {
        status: 202,
        headers: { "Content-Type": "application/json" },
      });
    });
    const sent = sendInBackground("agent_1", { text: "Later" });
    await vi.advanceTimersByTimeAsync(250);
    expect((await sent).status).toBe("running");
    expect(requests).toHaveLength(2);
    expect(requests[1]!.headers.get("Idempotency-Key")).toBe(requests[0]!.headers.get("Idempotency-Key"));
  });
});
