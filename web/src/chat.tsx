// chat.tsx: talking to an agent, the reply streamed token by token.
import { useRef, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas, streamMessage } from "./api";
import { ErrorBox, Field } from "./ui";

type Turn = {
  // key tells the turns apart, for rendering: a reply has no id until done.
  key: number;
  role: "user" | "agent";
  text: string;
  metadata?: Schemas["MessageMetadata"];
  messageId?: string;
  streaming?: boolean;
};

export function Chat({ agent }: { agent: Agent }) {
  const [userId, setUserId] = useState("console");
  const [roomId, setRoomId] = useState("");
  const [text, setText] = useState("");
  const [stream, setStream] = useState(true);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController>();
  const turnKeys = useRef(0);

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
    setBusy(true);
    setError(undefined);
    setText("");
    const key = (turnKeys.current += 2);
    setTurns((ts) => [
      ...ts,
      { key: key - 1, role: "user", text: body.text },
      { key, role: "agent", text: "", streaming: true },
    ]);
    abort.current = new AbortController();
    try {
      if (stream) {
        let reply = "";
        await streamMessage(
          agent.id,
          body,
          (ev) => {
            if (ev.type === "token" && "content" in ev) {
              reply += ev.content;
              update({ text: reply });
            } else if (ev.type === "done" && "metadata" in ev) {
              update({ metadata: ev.metadata, messageId: ev.messageId, streaming: false });
            } else if (ev.type === "error" && "error" in ev) {
              throw new ApiFailure(502, ev.error, null);
            }
          },
          abort.current.signal,
        );
      } else {
        const r = await call(api.POST("/agents/{agentId}/messages", { params: { path: { agentId: agent.id } }, body }));
        // The operation answers text/event-stream only when asked to stream.
        if (typeof r === "string") throw new Error("The server streamed a reply that was not asked to stream.");
        update({ text: r.data.response, metadata: r.data.metadata, messageId: r.data.messageId });
      }
    } catch (err) {
      setError(err);
    } finally {
      update({ streaming: false });
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="chat-title" class="chat">
      <h2 id="chat-title">Chat</h2>
      <div class="pair">
        <Field id="userId" label="User id" error={error}>
          {(desc) => (
            <input id="userId" value={userId} aria-describedby={desc} onInput={(e) => setUserId(e.currentTarget.value)} />
          )}
        </Field>
        <Field id="roomId" label="Room id" hint="Empty for a direct conversation." error={error}>
          {(desc) => (
            <input id="roomId" value={roomId} aria-describedby={desc} onInput={(e) => setRoomId(e.currentTarget.value)} />
          )}
        </Field>
      </div>
      <ol class="transcript" aria-live="polite">
        {turns.map((t) => (
          <li key={t.key} class={`turn ${t.role}`}>
            <span class="who">{t.role === "user" ? userId || "you" : agent.name}</span>
            <p class="text" data-streaming={t.streaming ? "true" : undefined}>
              {t.text}
              {t.streaming && <span class="cursor" aria-hidden="true">▍</span>}
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
      <ErrorBox error={error} />
      <form
        class="send"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <Field id="text" label="Message" error={error}>
          {(desc, invalid) => (
            <textarea
              id="text"
              rows={2}
              value={text}
              aria-describedby={desc}
              aria-invalid={invalid}
              onInput={(e) => setText(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey) {
                  e.preventDefault();
                  void send();
                }
              }}
            />
          )}
        </Field>
        <label class="inline">
          <input type="checkbox" checked={stream} onChange={(e) => setStream(e.currentTarget.checked)} />
          Stream the reply
        </label>
        <button type="submit" disabled={busy || !text.trim()}>
          Send
        </button>
        {busy && (
          <button type="button" onClick={() => abort.current?.abort()}>
            Stop
          </button>
        )}
      </form>
    </section>
  );
}
