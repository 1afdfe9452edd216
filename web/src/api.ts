// api.ts is the console's only way to the API: openapi-fetch typed by the
// schema.d.ts that `make generate` produces from openapi.yaml, so a change
// of the contract that the console does not follow stops `make web`.
import createClient from "openapi-fetch";
import type { components, paths } from "../../clients/typescript/schema";

export type Schemas = components["schemas"];
export type Agent = Schemas["Agent"];
export type StreamEvent = Schemas["StreamEvent"];

const keyName = "agentd.apiKey";
const readOnlyName = "agentd.readOnly";
// readOnlyEvent is fired on window when the console learns that the key is
// read-only (useReadOnly listens to it).
export const readOnlyEvent = "agentd:read-only";

// The API key lives in this tab's session storage only: closing the tab
// signs out, and no other tab or later visit can read it. The console
// cannot ask a key's scope: it learns that a key is read-only when the
// API refuses it a write (403 INSUFFICIENT_PERMISSIONS), and from then on
// pages leave out the controls that change things.
export const session = {
  key: (): string | null => sessionStorage.getItem(keyName),
  signIn: (key: string): void => {
    sessionStorage.setItem(keyName, key);
    sessionStorage.removeItem(readOnlyName);
  },
  signOut: (): void => {
    sessionStorage.removeItem(keyName);
    sessionStorage.removeItem(readOnlyName);
  },
  // readOnly is whether the API has refused this key a write.
  readOnly: (): boolean => sessionStorage.getItem(readOnlyName) === "true",
};

export const api = createClient<paths>({ baseUrl: `${location.origin}/v1` });
api.use({
  onRequest({ request }) {
    const key = session.key();
    if (key) request.headers.set("Authorization", `Bearer ${key}`);
    return request;
  },
});

// getAgent reads an agent past the browser's cache. Get Agent's ETag
// leaves the metrics out (by ruling), so a revalidation the browser makes
// by itself gets 304 and keeps the old body: the header's counts would
// never move while one chats.
export async function getAgent(agentId: string, signal?: AbortSignal): Promise<Agent> {
  const r = await call(api.GET("/agents/{agentId}", { params: { path: { agentId } }, signal, cache: "no-store" }));
  return r.data;
}

// ApiFailure is an error answer of the API: the envelope's code, message and
// details, plus the status and, for 429, when to retry.
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: Schemas["ErrorCode"] | "NETWORK";
  readonly details: Schemas["ErrorDetails"];
  // retryAt is when a rate-limited call may be retried (429 only).
  readonly retryAt?: Date;

  constructor(status: number, body: Schemas["Error"] | undefined, retryAfter: string | null) {
    super(body?.message ?? `The server answered ${status} without an error envelope.`);
    this.status = status;
    this.code = body?.code ?? "INTERNAL_ERROR";
    this.details = body?.details ?? {};
    const seconds = Number(retryAfter ?? this.details.retryAfter);
    if (status === 429 && seconds > 0) this.retryAt = new Date(Date.now() + seconds * 1000);
  }

  // field is the dotted path of the bad member of a 400, if any.
  get field(): string | undefined {
    return this.details.field;
  }
}

// failure turns an answer that is not a success into an ApiFailure.
export function failure(response: Response, error: unknown): ApiFailure {
  const body = (error as Schemas["ErrorEnvelope"] | undefined)?.error;
  return new ApiFailure(response.status, body, response.headers.get("Retry-After"));
}

// settle awaits an openapi-fetch call and returns its answer when it is a
// success, or throws an ApiFailure. A 401 also signs out: the key is wrong,
// expired or revoked.
async function settle<D>(
  request: Promise<{ data?: D; error?: unknown; response: Response }>,
): Promise<{ data?: D; response: Response }> {
  let answer: { data?: D; error?: unknown; response: Response };
  try {
    answer = await request;
  } catch (err) {
    throw networkFailure(err);
  }
  if (!answer.response.ok) {
    if (answer.response.status === 401) session.signOut();
    const f = failure(answer.response, answer.error);
    if (f.code === "INSUFFICIENT_PERMISSIONS" && !session.readOnly()) {
      sessionStorage.setItem(readOnlyName, "true");
      dispatchEvent(new Event(readOnlyEvent));
    }
    throw f;
  }
  return answer;
}

// call awaits an openapi-fetch call and returns its data, or throws an
// ApiFailure.
export async function call<D>(request: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data, response } = await settle(request);
  if (data === undefined) throw failure(response, undefined);
  return data;
}

// send awaits a call whose success has no body (202 Accepted), or throws an
// ApiFailure.
export async function send(request: Promise<{ error?: unknown; response: Response }>): Promise<void> {
  await settle(request);
}

function networkFailure(err: unknown): ApiFailure {
  if (err instanceof ApiFailure) return err;
  const f = new ApiFailure(
    0,
    { code: "INTERNAL_ERROR", message: `The server could not be reached: ${String(err)}` },
    null,
  );
  return Object.assign(f, { code: "NETWORK" as const });
}

// uuid is a random (version 4) UUID, for Idempotency-Key. crypto.randomUUID
// exists on HTTPS and localhost pages only; getRandomValues on every page.
export function uuid(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// retryDelays are the waits before each retry of a send whose answer was
// lost, or of a stream that dropped: five retries in about 8 seconds.
const retryDelays = [250, 500, 1000, 2000, 4000];

// retries is how many times in a row a send or a stream is retried.
export const retries = retryDelays.length;

// retryable is whether a failure may be retried with the same
// Idempotency-Key: the network failed (the request may or may not have
// reached the server), or the first request with the key still runs (409).
// Once a reply has started, a server error or a rate limit is worth waiting
// out too: the reply runs on, and another replica may answer.
function retryable(err: unknown, started: boolean): boolean {
  if (!(err instanceof ApiFailure)) return false;
  if (err.code === "NETWORK" || err.code === "IDEMPOTENCY_KEY_IN_USE") return true;
  return started && (err.status >= 500 || err.status === 429);
}

// pause waits ms (or until a rate limit's retry time, when later), and
// rejects when signal aborts.
function pause(ms: number, err: unknown, signal?: AbortSignal): Promise<void> {
  if (err instanceof ApiFailure && err.retryAt) ms = Math.max(ms, err.retryAt.getTime() - Date.now());
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => (signal?.removeEventListener("abort", stop), resolve()), ms);
    const stop = () => (clearTimeout(t), reject(signal?.reason));
    signal?.addEventListener("abort", stop, { once: true });
  });
}

// sendMessage sends a message without streaming. It carries a fresh
// Idempotency-Key, so when the answer is lost on the way (a network
// failure) the send is retried: the server answers a repeat with the first
// answer rather than making a second run. The answer is the reply, or the
// run (202) when the reply took longer than the server waits or the body
// asked for background: replyOfRun (runs.ts) follows that run.
export async function sendMessage(
  agentId: string,
  body: Schemas["MessageRequest"],
  signal?: AbortSignal,
): Promise<Schemas["MessageReply"] | Schemas["Run"]> {
  const key = uuid();
  for (let attempt = 0; ; attempt++) {
    try {
      const r = await call(
        api.POST("/agents/{agentId}/messages", {
          params: { path: { agentId }, header: { "Idempotency-Key": key } },
          body,
          signal,
        }),
      );
      // The operation answers text/event-stream only when asked to stream.
      if (typeof r === "string") throw new Error("The server streamed a reply that was not asked to stream.");
      return r.data;
    } catch (err) {
      const delay = retryDelays[attempt];
      if (signal?.aborted || delay === undefined || !retryable(err, false)) throw err;
      await pause(delay, err, signal);
    }
  }
}

// sendInBackground sends a message with background: true and returns its
// run as the 202 answers it (queued, or later): the reply is made without
// the client, which follows the run (waitForRun in runs.ts). It is
// sendMessage's send, retries included.
export async function sendInBackground(
  agentId: string,
  body: Schemas["MessageRequest"],
  signal?: AbortSignal,
): Promise<Schemas["Run"]> {
  const r = await sendMessage(agentId, { ...body, stream: false, background: true }, signal);
  if (!("status" in r)) throw new Error("The server answered a background send with a reply rather than its run.");
  return r;
}

// StreamOptions are streamMessage's optional inputs: signal stops reading
// (the reply runs on; the cancel operation stops it), and onRetry is told
// of each retry after the stream dropped (attempt from 1) and of each
// stream that opened again (attempt 0).
export type StreamOptions = { signal?: AbortSignal; onRetry?: (attempt: number) => void };

// streamMessage sends a message with stream: true and calls onEvent with
// each server-sent event as it arrives, once each. EventSource cannot POST,
// so the stream is read from fetch's body and split into frames here.
//
// The reply runs on the server whatever happens to the connection, so a
// stream that drops (a network failure, or a body that ends before its done
// or error event) is resumed, up to five times in a row: after the start
// event named the reply, with the resume operation and Last-Event-ID (the
// id of the last event received); before it, by sending again with the same
// Idempotency-Key, which the server answers with the first send's stream
// instead of a second reply. Events already received are skipped by id.
export async function streamMessage(
  agentId: string,
  body: Schemas["MessageRequest"],
  onEvent: (event: StreamEvent) => void,
  { signal, onRetry }: StreamOptions = {},
): Promise<void> {
  const key = uuid();
  let messageId: string | undefined;
  let lastId = 0;
  let started = false;
  for (let attempt = 0; ;) {
    let lost: unknown;
    let stream: ReadableStream | null | undefined;
    try {
      stream = messageId
        ? await call(
            api.GET("/agents/{agentId}/messages/{messageId}/stream", {
              params: { path: { agentId, messageId }, header: lastId ? { "Last-Event-ID": String(lastId) } : {} },
              parseAs: "stream",
              signal,
            }),
          )
        : await call(
            api.POST("/agents/{agentId}/messages/stream", {
              params: { path: { agentId }, header: { "Idempotency-Key": key } },
              body: { ...body, stream: true },
              parseAs: "stream",
              signal,
            }),
          );
      if (!stream) throw new ApiFailure(502, { code: "INTERNAL_ERROR", message: "The stream had no body." }, null);
    } catch (err) {
      if (signal?.aborted || !retryable(err, started)) throw err;
      lost = err;
    }
    if (stream) {
      started = true;
      if (attempt > 0) onRetry?.(0);
      // onEvent's own errors (the chat throws on an error event) end the
      // stream as they are; only a failed read is retried.
      const end = await readEvents(stream, (id, event) => {
        // A replay from the start (a repeated send) holds what was seen.
        if (id !== undefined) {
          if (id <= lastId) return;
          lastId = id;
        }
        attempt = 0;
        if (event.type === "start") messageId = event.messageId;
        onEvent(event);
      });
      if (end === true) return;
      if (signal?.aborted) throw signal.reason;
      lost = end;
    }
    const delay = retryDelays[attempt++];
    if (delay === undefined) throw lost;
    onRetry?.(attempt);
    await pause(delay, lost, signal);
  }
}

// readEvents reads a stream's frames, calling onEvent with each event and
// its id. It returns true when the stream's last event (done or error)
// arrived, else why the stream was cut short, as an ApiFailure NETWORK.
// onEvent's own errors are thrown as they are.
async function readEvents(
  stream: ReadableStream,
  onEvent: (id: number | undefined, event: StreamEvent) => void,
): Promise<true | ApiFailure> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<string>;
      try {
        chunk = await reader.read();
      } catch (err) {
        return networkFailure(err);
      }
      if (chunk.done) return networkFailure("the stream ended before its done or error event");
      // A CRLF cut between two reads joins in the buffer; a CR at its end
      // waits for the next read.
      buffer = (buffer + chunk.value).replaceAll("\r\n", "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // Lines starting with ":" are keep-alive comments.
        let id: number | undefined;
        const data: string[] = [];
        for (const line of frame.split("\n")) {
          const colon = line.indexOf(":");
          if (colon <= 0) continue;
          const value = line.slice(colon + 1).replace(/^ /, "");
          if (line.startsWith("id:") && /^[0-9]+$/.test(value)) id = Number(value);
          else if (line.startsWith("data:")) data.push(value);
        }
        if (!data.length) continue;
        const event = JSON.parse(data.join("\n")) as StreamEvent;
        onEvent(id, event);
        if (event.type === "done" || event.type === "error") return true;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
