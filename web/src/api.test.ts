// api.test.ts: the console's way to the API without a server: the errors
// it makes of answers (ApiFailure and the envelope), the retries of a send
// whose answer was lost, and the SSE reader of a streamed reply, with its
// resumption. fetch is answered here (src/test-setup.ts stubs it); the
// retry waits run on fake timers.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  ApiFailure,
  api,
  call,
  getAgent,
  readOnlyEvent,
  retries,
  send,
  sendMessage,
  session,
  streamMessage,
  type Schemas,
  type StreamEvent,
} from "./api";

// Answer is what the fake server does with one request: a response, or a
// thrown error for a network failure.
type Answer = (request: Request) => Response | Promise<Response>;

const fetchMock = vi.mocked(fetch);
// requests are the requests fetch was given, in order.
let requests: Request[];

// answer queues the answers of the next requests, one each; a request
// beyond them fails the test.
function answer(...answers: Answer[]): void {
  const queue = [...answers];
  fetchMock.mockImplementation(async (input) => {
    const request = input as Request;
    requests.push(request);
    const next = queue.shift();
    if (!next) throw new Error(`unexpected request ${request.method} ${request.url}`);
    return next(request);
  });
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return () =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}

function envelope(status: number, code: Schemas["ErrorCode"], details: Schemas["ErrorDetails"] = {}): Answer {
  return json(status, { error: { code, message: `refused: ${code}`, details } });
}

function networkDown(): Answer {
  return () => {
    throw new TypeError("fetch failed");
  };
}

// sse answers with a stream whose reads give the chunks one by one, then
// end: closed (a body that ends), or with an error (a connection cut).
function sse(chunks: (string | Uint8Array)[], end: "close" | "cut" = "close"): Answer {
  return () => {
    const queue = chunks.map((c) => (typeof c === "string" ? new TextEncoder().encode(c) : c));
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = queue.shift();
        if (next) controller.enqueue(next);
        else if (end === "close") controller.close();
        else controller.error(new TypeError("network error"));
      },
    });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
}

// frame is one server-sent event as agentd writes it.
function frame(id: number, event: unknown): string {
  return `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
}

const start = { type: "start", messageId: "msg_1" } satisfies StreamEvent;
const token = (content: string) => ({ type: "token", content }) satisfies StreamEvent;
const done = {
  type: "done",
  messageId: "msg_1",
  metadata: { tokensUsed: 3, inputTokens: 2, outputTokens: 1, costUsd: 0, responseTime: 12, model: "gpt-test" },
} satisfies StreamEvent;

const reply: Schemas["MessageReply"] = {
  messageId: "msg_1",
  response: "hello",
  agentId: "agent_1",
  timestamp: "2026-01-01T00:00:00Z",
  metadata: { tokensUsed: 3, inputTokens: 2, outputTokens: 1, costUsd: 0, responseTime: 12, model: "gpt-test" },
};

// outcome is what a promise comes to, so that a rejection is never left
// unhandled while a test moves the clock.
function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

// settle is the outcome of a promise after running every timer it sets.
async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  const result = outcome(promise);
  await vi.runAllTimersAsync();
  return result;
}

// stream runs streamMessage to its end, and returns the events it gave and
// the retries it reported.
async function stream(options: { signal?: AbortSignal } = {}) {
  const events: StreamEvent[] = [];
  const retried: number[] = [];
  const result = await settle(
    streamMessage("agent_1", { text: "hi" }, (e) => events.push(e), { ...options, onRetry: (n) => retried.push(n) }),
  );
  return { ...result, events, retried };
}

beforeEach(() => {
  requests = [];
  fetchMock.mockReset();
  sessionStorage.clear();
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("ApiFailure and the envelope", () => {
  it("gives a 400's code, message and bad field", async () => {
    answer(envelope(400, "INVALID_REQUEST", { field: "bio.0", reason: "too long" }));
    const { error } = await settle(call(api.GET("/agents")));
    expect(error).toBeInstanceOf(ApiFailure);
    const f = error as ApiFailure;
    expect([f.status, f.code, f.message, f.field, f.details.reason]).toEqual([
      400,
      "INVALID_REQUEST",
      "refused: INVALID_REQUEST",
      "bio.0",
      "too long",
    ]);
    expect(f.retryAt).toBeUndefined();
  });

  it("makes an answer without an envelope INTERNAL_ERROR, with its status", async () => {
    answer(() => new Response("Bad Gateway", { status: 502 }));
    const { error } = await settle(call(api.GET("/agents")));
    expect(error).toMatchObject({
      status: 502,
      code: "INTERNAL_ERROR",
      message: "The server answered 502 without an error envelope.",
      details: {},
    });
  });

  it("makes a network failure NETWORK, status 0", async () => {
    answer(networkDown());
    const { error } = await settle(call(api.GET("/agents")));
    expect(error).toBeInstanceOf(ApiFailure);
    expect(error).toMatchObject({ status: 0, code: "NETWORK" });
    expect((error as ApiFailure).message).toContain("could not be reached");
  });

  it("says when a 429 may be retried: Retry-After, else details.retryAfter", () => {
    vi.setSystemTime(new Date("2026-01-01T00:00:00Z"));
    const body = { code: "RATE_LIMIT_EXCEEDED", message: "slow down", details: { retryAfter: 3 } } as const;
    expect(new ApiFailure(429, body, "7").retryAt).toEqual(new Date("2026-01-01T00:00:07Z"));
    expect(new ApiFailure(429, body, null).retryAt).toEqual(new Date("2026-01-01T00:00:03Z"));
    expect(new ApiFailure(429, { ...body, details: {} }, null).retryAt).toBeUndefined();
    expect(new ApiFailure(503, body, "7").retryAt).toBeUndefined();
  });

  it("takes Retry-After from the answer's header", async () => {
    vi.setSystemTime(new Date("2026-01-01T00:00:00Z"));
    answer(envelope(429, "RATE_LIMIT_EXCEEDED"), json(429, {}, { "Retry-After": "5" }));
    const { error } = await settle(call(api.GET("/agents")));
    expect((error as ApiFailure).retryAt).toBeUndefined();
    const second = await settle(call(api.GET("/agents")));
    expect(second.error).toMatchObject({ status: 429, code: "INTERNAL_ERROR" });
    expect((second.error as ApiFailure).retryAt).toEqual(new Date("2026-01-01T00:00:05Z"));
  });

  it("sends the key, and signs out when it is refused (401)", async () => {
    session.signIn("agk_test");
    answer(envelope(401, "UNAUTHORIZED"));
    const { error } = await settle(call(api.GET("/agents")));
    expect(requests[0]?.headers.get("Authorization")).toBe("Bearer agk_test");
    expect(error).toMatchObject({ code: "UNAUTHORIZED" });
    expect(session.key()).toBeNull();
  });

  it("marks the key read-only on the first INSUFFICIENT_PERMISSIONS, and says so once", async () => {
    session.signIn("agk_read");
    const told = vi.fn();
    addEventListener(readOnlyEvent, told);
    try {
      answer(envelope(403, "INSUFFICIENT_PERMISSIONS"), envelope(403, "INSUFFICIENT_PERMISSIONS"));
      expect(session.readOnly()).toBe(false);
      await settle(call(api.DELETE("/agents/{agentId}", { params: { path: { agentId: "agent_1" } } })));
      await settle(call(api.DELETE("/agents/{agentId}", { params: { path: { agentId: "agent_1" } } })));
      expect(session.readOnly()).toBe(true);
      expect(told).toHaveBeenCalledTimes(1);
      // Signing in again forgets it.
      session.signIn("agk_write");
      expect(session.readOnly()).toBe(false);
    } finally {
      removeEventListener(readOnlyEvent, told);
    }
  });

  it("lets send take a success without a body, which call refuses", async () => {
    answer(
      () => new Response(null, { status: 202 }),
      () => new Response(null, { status: 202 }),
    );
    const path = { params: { path: { webhookId: "wh_1" } } };
    expect(await settle(send(api.POST("/webhooks/{webhookId}/test", path)))).toEqual({ value: undefined });
    const { error } = await settle(call(api.POST("/webhooks/{webhookId}/test", path)));
    expect(error).toMatchObject({ status: 202, code: "INTERNAL_ERROR" });
  });
});

describe("getAgent, for the header's metrics", () => {
  it("reads past the browser's cache, so the metrics move", async () => {
    // Get Agent's ETag leaves metrics out: a cached read would revalidate,
    // get 304 and keep the first body. Each read must reach the server.
    const agent = (totalMessages: number) =>
      json(200, { success: true, data: { id: "agent_1", metrics: { totalMessages } } });
    answer(agent(31), agent(32));
    expect((await getAgent("agent_1")).metrics.totalMessages).toBe(31);
    expect((await getAgent("agent_1")).metrics.totalMessages).toBe(32);
    expect(requests.map((r) => [r.method, new URL(r.url).pathname, r.cache])).toEqual([
      ["GET", "/v1/agents/agent_1", "no-store"],
      ["GET", "/v1/agents/agent_1", "no-store"],
    ]);
  });
});

describe("sendMessage retries", () => {
  it("sends again, with the same Idempotency-Key, after a network failure and a 409 IDEMPOTENCY_KEY_IN_USE", async () => {
    answer(networkDown(), envelope(409, "IDEMPOTENCY_KEY_IN_USE"), json(200, { data: reply }));
    const sent = outcome(sendMessage("agent_1", { text: "hi" }));
    // The waits are 250 ms, then 500 ms.
    await vi.advanceTimersByTimeAsync(249);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(requests).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(499);
    expect(requests).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(requests).toHaveLength(3);
    expect(await sent).toEqual({ value: reply });

    const keys = requests.map((r) => r.headers.get("Idempotency-Key"));
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).toBe(1);
    expect(
      requests.every((r) => r.method === "POST" && r.url === "http://agentd.test/v1/agents/agent_1/messages"),
    ).toBe(true);
  });

  it("does not retry what the server answered: a refusal, a server error, a rate limit", async () => {
    for (const refused of [
      envelope(400, "INVALID_MESSAGE"),
      envelope(500, "INTERNAL_ERROR"),
      envelope(429, "RATE_LIMIT_EXCEEDED"),
    ]) {
      requests = [];
      answer(refused);
      const { error } = await settle(sendMessage("agent_1", { text: "hi" }));
      expect(error).toBeInstanceOf(ApiFailure);
      expect(requests).toHaveLength(1);
    }
  });

  it(`gives up after ${retries} retries with the last failure`, async () => {
    answer(...Array.from({ length: retries + 1 }, networkDown));
    const { error } = await settle(sendMessage("agent_1", { text: "hi" }));
    expect(error).toMatchObject({ code: "NETWORK" });
    expect(requests).toHaveLength(retries + 1);
  });

  it("stops retrying when aborted", async () => {
    answer(networkDown(), networkDown());
    const abort = new AbortController();
    const sent = outcome(sendMessage("agent_1", { text: "hi" }, abort.signal));
    await vi.advanceTimersByTimeAsync(100);
    abort.abort(new Error("stopped"));
    expect((await sent).error).toEqual(new Error("stopped"));
    expect(requests).toHaveLength(1);
  });
});

describe("streamMessage and its SSE reader", () => {
  const whole = frame(1, start) + frame(2, token("héllo, ")) + frame(3, token("wörld")) + frame(4, done);
  const expected = [start, token("héllo, "), token("wörld"), done];

  it("reads the events of one chunk", async () => {
    answer(sse([whole]));
    const { error, events, retried } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual(expected);
    expect(retried).toEqual([]);
    expect(requests[0]?.url).toBe("http://agentd.test/v1/agents/agent_1/messages/stream");
    expect(await requests[0]?.json()).toEqual({ text: "hi", stream: true });
  });

  it("reads events cut across reads anywhere, within a line, a blank line or a character", async () => {
    // One byte a read: ö and é are two bytes each in UTF-8.
    const bytes = new TextEncoder().encode(whole);
    answer(sse([...bytes].map((b) => Uint8Array.of(b))));
    const { events } = await stream();
    expect(events).toEqual(expected);
  });

  it("joins multi-line data, takes CRLF, and skips pings, comments and other fields", async () => {
    answer(
      sse([
        ": ping\n\n",
        'id: 1\r\ndata: {"type":\r\ndata: "start", "messageId": "msg_1"}\r\n\r\n',
        ":\n\nevent: message\nretry: 1000\n",
        `id: 2\ndata:${JSON.stringify(token("a"))}\n\n`,
        ": ping\n\nid: 3\n\n",
        frame(4, done),
      ]),
    );
    const { error, events } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual([start, token("a"), done]);
  });

  it("reads CRLF lines cut between CR and LF", async () => {
    const bytes = new TextEncoder().encode(whole.replaceAll("\n", "\r\n"));
    answer(sse([...bytes].map((b) => Uint8Array.of(b))));
    const { error, events } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual(expected);
  });

  it("ends at an error event, and lets onEvent's own error through without retrying", async () => {
    const failed = { type: "error", error: { code: "MODEL_ERROR", message: "the model failed" } } satisfies StreamEvent;
    answer(sse([frame(1, start), frame(2, failed), frame(3, token("never read"))]));
    const { error, events } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual([start, failed]);

    requests = [];
    answer(sse([frame(1, start), frame(2, failed)]));
    const thrown = new Error("the chat saw an error event");
    const { error: got } = await settle(
      streamMessage("agent_1", { text: "hi" }, (e) => {
        if (e.type === "error") throw thrown;
      }),
    );
    expect(got).toBe(thrown);
    expect(requests).toHaveLength(1);
  });

  it("resumes a stream cut after start with Last-Event-ID, skipping the events it had", async () => {
    answer(
      sse([frame(1, start), frame(2, token("a"))], "cut"),
      // The resumed stream repeats event 2, then goes on.
      sse([frame(2, token("a")), frame(3, token("b")), frame(4, done)]),
    );
    const { error, events, retried } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual([start, token("a"), token("b"), done]);
    // Told of the retry, then that the stream opened again.
    expect(retried).toEqual([1, 0]);
    expect(requests.map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual([
      "POST /v1/agents/agent_1/messages/stream",
      "GET /v1/agents/agent_1/messages/msg_1/stream",
    ]);
    expect(requests[1]?.headers.get("Last-Event-ID")).toBe("2");
  });

  it("reads on past requires_action through the pings of the wait, and resumes a wait cut short", async () => {
    const waits = {
      type: "requires_action",
      runId: "run_1",
      toolCalls: [{ id: "call_1", name: "get_price", arguments: { symbol: "SOL" } }],
      expiresAt: "2026-01-02T00:00:00Z",
    } satisfies StreamEvent;
    const call = { type: "tool_call", id: "call_1", name: "get_price", arguments: { symbol: "ETH" } } as const;
    const result = { type: "tool_result", id: "call_1", name: "get_price", ok: true, result: "142" } as const;
    answer(
      sse([frame(1, start), frame(2, waits), ": ping\n\n", ": ping\n\n"], "cut"),
      // The decided run goes on: its events follow on the resumed stream.
      sse([": ping\n\n", frame(3, call), frame(4, result), frame(5, token("ETH: 142")), frame(6, done)]),
    );
    const { error, events } = await stream();
    expect(error).toBeUndefined();
    expect(events).toEqual([start, waits, call, result, token("ETH: 142"), done]);
    expect(requests[1]?.headers.get("Last-Event-ID")).toBe("2");
  });

  it("resumes a body that ends before its done event", async () => {
    answer(sse([frame(1, start)], "close"), sse([frame(2, done)]));
    const { events } = await stream();
    expect(events).toEqual([start, done]);
    expect(requests[1]?.headers.get("Last-Event-ID")).toBe("1");
  });

  it("sends again with the same Idempotency-Key until the reply has started", async () => {
    answer(
      networkDown(),
      sse([], "cut"),
      // A repeated send is answered with the first send's stream, from the start.
      sse([whole]),
    );
    const { events, retried } = await stream();
    expect(events).toEqual(expected);
    // Each stream that opens is told of (0), even one cut before its first event.
    expect(retried).toEqual([1, 0, 2, 0]);
    expect(requests.map((r) => r.method)).toEqual(["POST", "POST", "POST"]);
    expect(new Set(requests.map((r) => r.headers.get("Idempotency-Key"))).size).toBe(1);
  });

  it("retries a server error or a rate limit only once the reply has started, waiting out Retry-After", async () => {
    answer(envelope(503, "AGENT_UNAVAILABLE"));
    expect((await stream()).error).toMatchObject({ status: 503 });
    expect(requests).toHaveLength(1);

    requests = [];
    answer(
      sse([frame(1, start)], "cut"),
      envelope(503, "AGENT_UNAVAILABLE"),
      json(429, { error: { code: "RATE_LIMIT_EXCEEDED", message: "slow down", details: {} } }, { "Retry-After": "2" }),
      sse([frame(2, done)]),
    );
    const events: StreamEvent[] = [];
    const streamed = outcome(streamMessage("agent_1", { text: "hi" }, (e) => events.push(e)));
    // 250 ms after the cut, 500 ms after the 503, then 2 s for the 429
    // (longer than the 1 s the third retry would wait).
    await vi.advanceTimersByTimeAsync(750);
    expect(requests).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1999);
    expect(requests).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(requests).toHaveLength(4);
    expect((await streamed).error).toBeUndefined();
    expect(events).toEqual([start, done]);
  });

  it(`gives up after ${retries} retries in a row, counting afresh after each event`, async () => {
    answer(
      sse([frame(1, start)], "cut"),
      ...Array.from({ length: retries - 1 }, networkDown),
      // An event resets the count: five more failures are allowed.
      sse([frame(2, token("a"))], "cut"),
      ...Array.from({ length: retries }, networkDown),
    );
    const { error, events, retried } = await stream();
    expect(error).toMatchObject({ code: "NETWORK" });
    expect(events).toEqual([start, token("a")]);
    expect(requests).toHaveLength(2 * retries + 1);
    expect(retried.slice(-retries)).toEqual([1, 2, 3, 4, 5]);
  });

  it("stops when aborted, without retrying", async () => {
    const abort = new AbortController();
    answer(sse([frame(1, start)], "cut"), sse([frame(2, done)]));
    const { error } = await settle(
      streamMessage("agent_1", { text: "hi" }, (e) => e.type === "start" && abort.abort(new Error("stopped")), {
        signal: abort.signal,
      }),
    );
    expect(error).toEqual(new Error("stopped"));
    expect(requests).toHaveLength(1);
  });
});
