// chat.tsx: talking to an agent, the reply streamed token by token and
// shown as markdown, the timeline of the tool calls a reply made (also
// shown in history and on a run's page) with the decision on each that
// waited for one, and the card that decides a run's calls while it waits.
import { useEffect, useRef, useState } from "preact/hooks";
import {
  type Agent,
  ApiFailure,
  api,
  call,
  type Schemas,
  retries,
  sendInBackground,
  sendMessage,
  streamMessage,
} from "./api";
import { ApprovalCard, ApprovalNote } from "./approvals";
import { type Waiting, waitingOf, waitingOfEvent } from "./decisions";
import { exclusive, type Lock, useAction } from "./hooks";
import { Markdown } from "./markdown-view";
import { usage } from "./money";
import { type Run, announce, isFinal, replyOfRun, runPath, strategies, waitForRun } from "./runs";
import { CopyButton, EmptyState, ErrorBox, RunStatusPill, TextArea, TextField, when } from "./ui";

export type Turn = {
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
  // run is the background run answering a message, while it is followed.
  run?: Pick<Run, "id" | "agentId" | "status">;
  // failure is why a background run ended without a reply.
  failure?: string;
  // waiting is what the reply's run waits for, while it waits for a
  // person's decision.
  waiting?: Waiting;
};

// Reply is what Stop needs of the reply being written: whether it streams,
// its id once the start event gave it, and whether Stop was pressed.
type Reply = { streamed: boolean; messageId?: string; stop: boolean };

// ToolView is a tool call as a card shows it: ok and result are missing
// until its tool_result arrives, durationMs and the approval of a call
// that waited for one until the reply's metadata.
type ToolView = Pick<Schemas["ToolCall"], "id" | "name" | "arguments"> &
  Partial<Pick<Schemas["ToolCall"], "ok" | "result" | "durationMs" | "approval">>;

// ToolCalls are the steps of a reply's tool calls as a timeline, in call
// order: each with its name, state, time, arguments and result, and the
// approval it waited for when it carries one. live is whether the reply is
// still streaming, so a call without a result yet is running rather than
// cut short.
export function ToolCalls({ calls, live }: { calls?: ToolView[]; live?: boolean }) {
  if (!calls?.length) return null;
  return (
    <ol class="tool-calls" aria-label="Tool steps">
      {calls.map((c) => (
        <ToolCard key={c.id} call={c} live={live} />
      ))}
    </ol>
  );
}

// shortResult is how much of a long result shows until it is expanded.
const shortResult = 280;

function ToolCard({ call: c, live }: { call: ToolView; live?: boolean }) {
  const [open, setOpen] = useState(false);
  const result = c.result === undefined ? undefined : pretty(c.result);
  const long = result !== undefined && (result.length > shortResult || result.split("\n").length > 8);
  const resultId = `${c.id}-result`;
  // A call a person denied was never run: it did not fail.
  const denied = c.approval?.approved === false;
  const state = c.ok === undefined ? (live ? "running" : "unfinished") : c.ok ? "ok" : denied ? "denied" : "failed";
  return (
    <li class={`tool-call ${state}`} data-tool={c.name}>
      <div class="tool-head">
        <code class="tool-name">{c.name}</code>
        <span class={`status ${state === "ok" ? "succeeded" : state}`}>
          {state === "running" && <span class="spinner" aria-hidden="true" />}
          {state === "unfinished" ? "no result" : state}
        </span>
        {c.durationMs !== undefined && !denied && <span class="meta">{Math.round(c.durationMs)} ms</span>}
      </div>
      {c.approval && <ApprovalNote approval={c.approval} />}
      <p class="step-label">Arguments</p>
      <pre class="json tool-args">{JSON.stringify(c.arguments, null, 2)}</pre>
      {result !== undefined && (
        <>
          <p class="step-label">Result</p>
          <pre id={resultId} class="json tool-result">
            {long && !open ? `${result.split("\n").slice(0, 8).join("\n").slice(0, shortResult)}…` : result}
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

// ReplyMeta is the line under a message: when (in history), then for a
// reply its model, cost and tokens, time and id.
function ReplyMeta({ turn: t, at }: { turn: Turn; at?: string }) {
  const m = t.metadata;
  const reply = m ? [m.model, usage(m), `${Math.round(m.responseTime)} ms`] : [];
  const parts = [at && when(at), ...reply, t.messageId].filter(Boolean);
  if (!parts.length) return null;
  return <p class="meta">{parts.join(" · ")}</p>;
}

// refusedOutright is whether a send failed with an answer that made no
// run: any 4xx but a key still in use (whose first request runs on).
function refusedOutright(err: unknown): boolean {
  return err instanceof ApiFailure && err.status >= 400 && err.status < 500 && err.code !== "IDEMPOTENCY_KEY_IN_USE";
}

// ChatProps: beforeSend runs before each message is sent (the playground
// applies its settings there; its failure keeps the message unsent), and
// onTurn after each turn ends, however it ended (the page reads the
// agent's metrics again).
type ChatProps = { agent: Agent; beforeSend?: () => Promise<void>; onTurn?: () => void };

export function Chat({ agent, beforeSend, onTurn }: ChatProps) {
  const [userId, setUserId] = useState("console");
  const [roomId, setRoomId] = useState("");
  const [text, setText] = useState("");
  const [stream, setStream] = useState(true);
  const [background, setBackground] = useState(false);
  const [strategy, setStrategy] = useState<Schemas["MultitaskStrategy"]>(
    agent.settings?.runs?.multitaskStrategy ?? "enqueue",
  );
  // following stops the waits for background runs when the page goes.
  const following = useRef<AbortController>();
  useEffect(() => {
    const abort = new AbortController();
    following.current = abort;
    return () => abort.abort();
  }, []);
  const [turns, setTurns] = useState<Turn[]>([]);
  const { busy, error, run, setError } = useAction();
  const [stopping, setStopping] = useState(false);
  // retry is the attempt of resuming a dropped stream, 0 when none.
  const [retry, setRetry] = useState(0);
  const abort = useRef<AbortController>();
  const reply = useRef<Reply>();
  const turnKeys = useRef(0);
  // One turn at a time, whatever sends it (the button or Enter).
  const lock = useRef<Lock>({ held: false });
  // Leaving the page stops reading; the reply runs on and is stored.
  useEffect(() => () => abort.current?.abort(), []);
  // The transcript follows the reply as it grows, unless one has scrolled
  // up to read (stick). Where it scrolls in its own box (the playground on
  // a wide screen) it keeps to its bottom; where the page scrolls, a new
  // turn is scrolled into view above the message box (its scroll-margin).
  const transcript = useRef<HTMLOListElement>(null);
  const stick = useRef(true);
  const scrolls = () => !!transcript.current && transcript.current.scrollHeight > transcript.current.clientHeight;
  useEffect(() => {
    stick.current = true;
    if (!scrolls()) transcript.current?.lastElementChild?.scrollIntoView({ block: "nearest" });
  }, [turns.length]);
  useEffect(() => {
    if (scrolls() && stick.current) transcript.current!.scrollTop = transcript.current!.scrollHeight;
  }, [turns]);

  // update replaces the last turn, the reply being written.
  const update = (patch: Partial<Turn>) =>
    setTurns((ts) => [...ts.slice(0, -1), { ...(ts[ts.length - 1] as Turn), ...patch }]);

  // setTurn changes the turn keyed key (a background reply).
  const setTurn = (key: number, patch: Partial<Turn>) =>
    setTurns((ts) => ts.map((t) => (t.key === key ? { ...t, ...patch } : t)));

  // showWaiting shows on turn key what its run waits for, or nothing once
  // it goes on; a run newly seen waiting is announced, so the sidebar's
  // count of waiting runs takes it in at once.
  const announced = useRef(new Set<string>());
  const showWaiting = (key: number, waiting: Waiting | undefined) => {
    setTurn(key, { waiting });
    if (waiting && !announced.current.has(waiting.run.id)) {
      announced.current.add(waiting.run.id);
      announce({ runId: waiting.run.id, decided: false });
    }
  };

  const send = () =>
    exclusive(lock.current, async () => {
      if (!text.trim()) return;
      const body: Schemas["MessageRequest"] = {
        text,
        ...(userId ? { userId } : {}),
        ...(roomId ? { roomId } : {}),
        context: { platform: "console" },
        multitaskStrategy: strategy,
      };
      await run(async () => {
        await beforeSend?.();
        setText("");
        if (background) await converseInBackground(body);
        else await converse(body);
      });
      if (!background) onTurn?.();
    });

  // converse shows the message and its reply as it arrives.
  const converse = async (body: Schemas["MessageRequest"]) => {
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
    // heard is whether the send was answered: an event, the reply or its run.
    let heard = false;
    try {
      if (stream) {
        let said = "";
        let tools: ToolView[] = [];
        // Any event after requires_action means the run goes on: the card
        // leaves (decided here, elsewhere, or expired).
        const going = { waiting: undefined };
        await streamMessage(
          agent.id,
          body,
          (ev) => {
            heard = true;
            setRetry(0);
            if (ev.type === "start") {
              current.messageId = ev.messageId;
              if (current.stop) void cancel(current);
            } else if (ev.type === "token" && "content" in ev) {
              said += ev.content;
              update({ text: said, ...going });
            } else if (ev.type === "tool_call") {
              tools = [...tools, { id: ev.id, name: ev.name, arguments: ev.arguments }];
              update({ tools, ...going });
            } else if (ev.type === "tool_result") {
              tools = tools.map((c) => (c.id === ev.id ? { ...c, ok: ev.ok, result: ev.result } : c));
              update({ tools, ...going });
            } else if (ev.type === "requires_action") {
              // The stream stays open while the run waits, and goes on
              // with the decided calls' events.
              showWaiting(key, waitingOfEvent(agent.id, ev));
            } else if (ev.type === "done" && "metadata" in ev) {
              // The metadata's calls are the same, with their durations
              // and the decisions on those that waited.
              update({
                ...going,
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
        const sent = await sendMessage(agent.id, body, reading.signal);
        heard = true;
        // 202: the reply took longer than the server waits, or its run
        // waits for a decision (shown until it goes on); the run goes on.
        const r =
          "status" in sent ? await replyOfRun(sent, reading.signal, (run) => showWaiting(key, waitingOf(run))) : sent;
        update({ text: r.response, metadata: r.metadata, messageId: r.messageId, tools: r.metadata.toolCalls });
      }
    } catch (err) {
      // A message refused outright (a budget spent, the conversation busy,
      // a rate limit) made nothing: its turns go, and its text goes back
      // in the box to send again; the error says why.
      if (!heard && refusedOutright(err)) {
        setTurns((ts) => ts.filter((t) => t.key !== key && t.key !== key - 1));
        setText((typed) => typed || body.text);
      }
      // Stop while waiting for a reply not streamed only stops waiting.
      throw reading.signal.aborted
        ? new Error("Stopped waiting: the reply runs on and is stored in the conversation.")
        : err;
    } finally {
      setTurn(key, { streaming: false, waiting: undefined });
      reply.current = undefined;
      setRetry(0);
      setStopping(false);
    }
  };

  // converseInBackground sends the message as a background run and shows
  // the run as a chip in the reply's place; the chat is free again at once.
  // The run is followed (?wait=30, again and again) and its reply shown
  // when it ends, however many messages are sent meanwhile.
  const converseInBackground = async (body: Schemas["MessageRequest"]) => {
    const queued = await sendInBackground(agent.id, body, following.current?.signal);
    const key = (turnKeys.current += 2);
    setTurns((ts) => [
      ...ts,
      { key: key - 1, role: "user", text: body.text },
      { key, role: "agent", text: "", run: queued },
    ]);
    const show = (r: Run) => {
      showWaiting(key, waitingOf(r));
      if (!isFinal(r.status)) return setTurn(key, { run: r });
      const reply = r.reply;
      setTurn(key, {
        run: r,
        text: reply?.response ?? "",
        metadata: reply?.metadata,
        messageId: reply?.messageId,
        tools: reply?.metadata.toolCalls,
        stopped: reply !== null && r.status !== "completed",
        failure:
          r.status === "completed"
            ? undefined
            : r.error
              ? `${r.error.code}: ${r.error.message}`
              : `The run ended ${r.status}.`,
      });
      onTurn?.();
    };
    if (isFinal(queued.status)) show(queued);
    else
      void waitForRun(queued, show, following.current?.signal).catch((err: unknown) => {
        if (!following.current?.signal.aborted) setTurn(key, { failure: `Stopped following the run: ${String(err)}` });
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
      <h2 id="chat-title" class="visually-hidden">
        Chat
      </h2>
      <div class="pair who-talks">
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
      {turns.length === 0 && (
        <EmptyState title={`Say something to ${agent.name}.`}>
          Settings apply to the next message; replies, their tool steps and tokens show here.
        </EmptyState>
      )}
      <ol
        class="transcript"
        aria-live="polite"
        ref={transcript}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {turns.map((t) => (
          <TurnView
            key={t.key}
            turn={t}
            who={t.role === "user" ? userId || "you" : agent.name}
            // The card leaves at once, the focus going back to the message
            // box; the run's next events (a stream's, or its next read)
            // show it going on.
            onDecided={(run) => {
              setTurn(t.key, { waiting: undefined, ...(t.run ? { run } : {}) });
              document.getElementById("text")?.focus();
            }}
          />
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
          hint="Enter sends, Shift+Enter starts a new line."
          error={error}
          rows={2}
          value={text}
          onValue={setText}
          onKeyDown={(e) => {
            // Not while an input method composes a character.
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <div class="send-row">
          <label class="inline">
            <input
              type="checkbox"
              checked={stream && !background}
              disabled={background}
              onChange={(e) => setStream(e.currentTarget.checked)}
            />
            Stream the reply
          </label>
          <label class="inline">
            <input
              id="background"
              type="checkbox"
              checked={background}
              onChange={(e) => setBackground(e.currentTarget.checked)}
            />
            Run in the background
          </label>
          <label class="strategy" title="What this message does when the conversation already has a run going">
            If busy
            <select
              id="multitaskStrategy"
              value={strategy}
              onChange={(e) => setStrategy(e.currentTarget.value as Schemas["MultitaskStrategy"])}
            >
              {strategies.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={busy || !text.trim()}>
            Send
          </button>
          {busy && (
            <button type="button" class="quiet" disabled={stopping} onClick={stop}>
              {stopping ? "Stopping…" : "Stop"}
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

// TurnView is one message of a chat or of history: a user's as typed, a
// reply as markdown after its tool steps (and the card deciding the calls
// its run waits for, told to onDecided), with a copy button and its
// metadata; at is when it was sent (history).
export function TurnView({
  turn: t,
  who,
  at,
  onDecided,
}: {
  turn: Turn;
  who: string;
  at?: string;
  onDecided?: (run: Run) => void;
}) {
  return (
    <li class={`turn ${t.role}`}>
      <div class="turn-head">
        <span class="who">{who}</span>
        {t.role === "agent" && !t.streaming && t.text && <CopyButton text={t.text} what="reply" />}
      </div>
      {t.run && (
        <p class="run-chip">
          <RunStatusPill status={t.run.status} />
          <a href={`#${runPath(t.run)}`}>
            {isFinal(t.run.status) ? "Background run" : "Running in the background"}: <code>{t.run.id}</code>
          </a>
        </p>
      )}
      <ToolCalls calls={t.tools} live={t.streaming} />
      {t.waiting && <ApprovalCard waiting={t.waiting} onDecided={onDecided} />}
      {t.role === "user" ? (
        <p class="text">{t.text}</p>
      ) : (
        <div class="text md" data-streaming={t.streaming ? "true" : undefined}>
          <Markdown text={t.text}>
            {t.streaming && (
              <span class="cursor" aria-hidden="true">
                ▍
              </span>
            )}
            {t.stopped && <span class="stopped"> (stopped)</span>}
          </Markdown>
        </div>
      )}
      {t.failure && <p class="field-error">{t.failure}</p>}
      <ReplyMeta turn={t} at={at} />
    </li>
  );
}
