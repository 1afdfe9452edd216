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
  const f = new ApiFailure(0, { code: "INTERNAL_ERROR", message: `The server could not be reached: ${String(err)}` }, null);
  return Object.assign(f, { code: "NETWORK" as const });
}

// streamMessage sends a message with stream: true and calls onEvent with
// each server-sent event as it arrives. EventSource cannot POST, so the
// stream is read from fetch's body and split into `data:` frames here.
export async function streamMessage(
  agentId: string,
  body: Schemas["MessageRequest"],
  onEvent: (event: StreamEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  const stream = await call(
    api.POST("/agents/{agentId}/messages/stream", {
      params: { path: { agentId } },
      body: { ...body, stream: true },
      parseAs: "stream",
      signal,
    }),
  );
  if (!stream) throw new ApiFailure(502, { code: "INTERNAL_ERROR", message: "The stream had no body." }, null);
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      // Lines starting with ":" are keep-alive comments.
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (data) onEvent(JSON.parse(data) as StreamEvent);
    }
  }
}
