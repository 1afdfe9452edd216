// chat.tsx: talking to an agent, the reply streamed token by token, and
// the cards of the tool calls a reply made (also shown in history).
import { useEffect, useRef, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas, retries, sendMessage, streamMessage } from "./api";
import { useAction } from "./hooks";
import { ErrorBox, TextArea, TextField } from "./ui";

type Turn = {
  // key tells the turns apart, for rendering: a reply has no id until done.
  key: number;
  role: "user" | "agent";
  text: string;
  metadata?: Schemas["MessageMetadata"];
  messageId?: string;
  streaming?: boolean;
  // stopped is whether Stop cut the reply: what was said is stored.
  stopped?: boolean;
  tools?: ToolView[];
};

// Reply is what Stop needs of the reply being written: whether it streams,
// its id once the start event gave it, and whether Stop was pressed.
type Reply = { streamed: boolean; messageId?: string; stop: boolean };

// ToolView is a tool call as a card shows it: ok and result are missing
// until its tool_result arrives, durationMs until the reply's metadata.
type ToolView = Pick<Schemas["ToolCall"], "id" | "name" | "arguments"> &
  Partial<Pick<Schemas["ToolCall"], "ok" | "result" | "durationMs">>;

// ToolCalls are the cards of a reply's tool calls, in call order; live is
// whether the reply is still streaming, so a call without a result yet is
// running rather than cut short.
export function ToolCalls({ calls, live }: { calls?: ToolView[]; live?: boolean }) {
  if (!calls?.length) return null;
  return (
    <ul class="tool-calls" aria-label="Tool calls">
      {calls.map((c) => (
        <ToolCard key={c.id} call={c} live={live} />
      ))}
    </ul>
  );
}

// shortResult is how much of a long result shows until it is expanded.
const shortResult = 280;

function ToolCard({ call: c, live }: { call: ToolView; live?: boolean }) {
  const [open, setOpen] = useState(false);
  const result = c.result === undefined ? undefined : pretty(c.result);
  const long = result !== undefined && (result.length > shortResult || result.split("\n").length > 8);
  const resultId = `${c.id}-result`;
  const state = c.ok === undefined ? (live ? "running" : "unfinished") : c.ok ? "ok" : "failed";
  return (
    <li class={`tool-call ${state}`} data-tool={c.name}>
      <div class="tool-head">
        <code class="tool-name">{c.name}</code>
        <span class={`status ${state === "ok" ? "succeeded" : state}`}>
          {state === "running" && <span class="spinner" aria-hidden="true" />}
          {state === "unfinished" ? "no result" : state}
        </span>
        {c.durationMs !== undefined && <span class="meta">{Math.round(c.durationMs)} ms</span>}
      </div>
      <span class="visually-hidden">Arguments:</span>
      <pre class="json tool-args">{JSON.stringify(c.arguments, null, 2)}</pre>
      {result !== undefined && (
        <>
          <span class="visually-hidden">Result:</span>
          <pre id={resultId} class="json tool-result">
            {long && !open ? `${result.slice(0, shortResult)}…` : result}
          </pre>
          {long && (
            <button
              type="button"
              class="link"
              aria-expanded={open}
              aria-controls={resultId}
              onClick={() => setOpen(!open)}
            >
              {open ? "Show less" : `Show the whole result (${result.length} characters)`}
            </button>
          )}
        </>
      )}
    </li>
  );
}

// pretty indents a result that is JSON; any other text (or JSON cut at
// 2,000 characters) is shown as it is.
function pretty(result: string): string {
  try {
    const v: unknown = JSON.parse(result);
    if (typeof v === "object" && v !== null) return JSON.stringify(v, null, 2);
  } catch {
    // not JSON
  }
  return result;
}

export function Chat({ agent }: { agent: Agent }) {
  const [userId, setUserId] = useState("console");
  const [roomId, setRoomId] = useState("");
  const [text, setText] = useState("");
  const [stream, setStream] = useState(true);
  const [turns, setTurns] = useState<Turn[]>([]);
  const { busy, error, run, setError } = useAction();
  const [stopping, setStopping] = useState(false);
  // retry is the attempt of resuming a dropped stream, 0 when none.
  const [retry, setRetry] = useState(0);
  const abort = useRef<AbortController>();
  const reply = useRef<Reply>();
  const turnKeys = useRef(0);
  // Leaving the page stops reading; the reply runs on and is stored.
  useEffect(() => () => abort.current?.abort(), []);

  // update replaces the last turn, the reply being written.
  const update = (patch: Partial<Turn>) =>
    setTurns((ts) => [...ts.slice(0, -1), { ...(ts[ts.length - 1] as Turn), ...patch }]);

  const send = async () => {
    if (!text.trim()) return;
    const body: Schemas["MessageRequest"] = {
      text,
      ...(userId ? { userId } : {}),
      ...(roomId ? { roomId } : {}),
      context: { platform: "console" },
    };
    await run(async () => {
      setText("");
      const key = (turnKeys.current += 2);
      setTurns((ts) => [
        ...ts,
        { key: key - 1, role: "user", text: body.text },
        { key, role: "agent", text: "", streaming: true },
      ]);
      const reading = new AbortController();
      abort.current = reading;
      const current: Reply = { streamed: stream, stop: false };
      reply.current = current;
      try {
        if (stream) {
          let said = "";
          let tools: ToolView[] = [];
          await streamMessage(
            agent.id,
            body,
            (ev) => {
              setRetry(0);
              if (ev.type === "start") {
                current.messageId = ev.messageId;
                if (current.stop) void cancel(current);
              } else if (ev.type === "token" && "content" in ev) {
                said += ev.content;
                update({ text: said });
              } else if (ev.type === "tool_call") {
                tools = [...tools, { id: ev.id, name: ev.name, arguments: ev.arguments }];
                update({ tools });
              } else if (ev.type === "tool_result") {
                tools = tools.map((c) => (c.id === ev.id ? { ...c, ok: ev.ok, result: ev.result } : c));
                update({ tools });
              } else if (ev.type === "done" && "metadata" in ev) {
                // The metadata's calls are the same, with their durations.
                update({
                  metadata: ev.metadata,
                  messageId: ev.messageId,
                  streaming: false,
                  stopped: ev.partial === true,
                  tools: ev.metadata.toolCalls ?? tools,
                });
              } else if (ev.type === "error" && "error" in ev) {
                throw new ApiFailure(502, ev.error, null);
              }
            },
            { signal: reading.signal, onRetry: setRetry },
          );
        } else {
          const r = await sendMessage(agent.id, body, reading.signal);
          update({ text: r.response, metadata: r.metadata, messageId: r.messageId, tools: r.metadata.toolCalls });
        }
      } catch (err) {
        // Stop while waiting for a reply not streamed only stops waiting.
        throw reading.signal.aborted
          ? new Error("Stopped waiting: the reply runs on and is stored in the conversation.")
          : err;
      } finally {
        update({ streaming: false });
        reply.current = undefined;
        setRetry(0);
        setStopping(false);
      }
    });
  };

  // cancel asks the server to stop the reply; its stream then ends by
  // itself with done marked partial. A failed cancel leaves the reply
  // streaming, and Stop may be pressed again.
  const cancel = async (r: Reply) => {
    if (!r.messageId) return;
    try {
      await call(
        api.POST("/agents/{agentId}/messages/{messageId}/cancel", {
          params: { path: { agentId: agent.id, messageId: r.messageId } },
        }),
      );
    } catch (err) {
      setError(err);
      r.stop = false;
      setStopping(false);
    }
  };

  // stop stops a streamed reply through the cancel operation (as soon as
  // the start event names it), and stops waiting for a reply not streamed.
  const stop = () => {
    const r = reply.current;
    if (!r?.streamed) {
      abort.current?.abort();
      return;
    }
    setStopping(true);
    setError(undefined);
    r.stop = true;
    void cancel(r);
  };

  return (
    <section aria-labelledby="chat-title" class="chat">
      <h2 id="chat-title">Chat</h2>
      <div class="pair">
        <TextField id="userId" label="User id" error={error} value={userId} onValue={setUserId} />
        <TextField
          id="roomId"
          label="Room id"
          hint="Empty for a direct conversation."
          error={error}
          value={roomId}
          onValue={setRoomId}
        />
      </div>
      <ol class="transcript" aria-live="polite">
        {turns.map((t) => (
          <li key={t.key} class={`turn ${t.role}`}>
            <span class="who">{t.role === "user" ? userId || "you" : agent.name}</span>
            <ToolCalls calls={t.tools} live={t.streaming} />
            <p class="text" data-streaming={t.streaming ? "true" : undefined}>
              {t.text}
              {t.streaming && (
                <span class="cursor" aria-hidden="true">
                  ▍
                </span>
              )}
              {t.stopped && <span class="stopped"> (stopped)</span>}
            </p>
            {t.metadata && (
              <p class="meta">
                {t.metadata.model} · {t.metadata.tokensUsed} tokens · {Math.round(t.metadata.responseTime)} ms ·{" "}
                {t.messageId}
              </p>
            )}
          </li>
        ))}
      </ol>
      {retry > 0 && (
        <p class="hint" role="status">
          The connection dropped: resuming the reply (attempt {retry} of {retries})…
        </p>
      )}
      <ErrorBox error={error} />
      <form
        class="send"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <TextArea
          id="text"
          label="Message"
          error={error}
          rows={2}
          value={text}
          onValue={setText}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <label class="inline">
          <input type="checkbox" checked={stream} onChange={(e) => setStream(e.currentTarget.checked)} />
          Stream the reply
        </label>
        <button type="submit" disabled={busy || !text.trim()}>
          Send
        </button>
        {busy && (
          <button type="button" disabled={stopping} onClick={stop}>
            {stopping ? "Stopping…" : "Stop"}
          </button>
        )}
      </form>
    </section>
  );
}
