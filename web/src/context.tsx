// context.tsx: what an agent's next turn would send the model for a
// message, section by section, without calling the model or writing
// anything (a read key may use it).
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { useAction } from "./hooks";
import { ErrorBox, TextArea, TextField } from "./ui";

type Preview = Schemas["ContextPreview"];

export function ContextPreview({ agent }: { agent: Agent }) {
  // The chat's defaults, so the preview sees the console chat's history.
  const [userId, setUserId] = useState("console");
  const [roomId, setRoomId] = useState("");
  const [text, setText] = useState("");
  const { busy, error, run } = useAction();
  const [preview, setPreview] = useState<{ text: string; data: Preview }>();

  const ask = () =>
    run(async () => {
      const body: Schemas["MessageRequest"] = {
        text,
        ...(userId.trim() ? { userId: userId.trim() } : {}),
        ...(roomId.trim() ? { roomId: roomId.trim() } : {}),
        context: { platform: "console" },
      };
      const r = await call(
        api.POST("/agents/{agentId}/context-preview", { params: { path: { agentId: agent.id } }, body }),
      );
      setPreview({ text, data: r.data });
    });

  return (
    <section aria-labelledby="context-title" class="context">
      <h2 id="context-title">Context</h2>
      <p class="hint">
        What the agent's next turn would send the model for a message: the system prompt (with the summary, memories and
        knowledge recalled), the history and the tools. Nothing is sent to the model and nothing is saved.
      </p>
      <form
        class="context-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void ask();
        }}
      >
        <TextArea id="text" label="Message" error={error} rows={2} value={text} onValue={setText} />
        <div class="pair">
          <TextField
            id="userId"
            label="User id"
            hint="Whose memories and conversation."
            error={error}
            value={userId}
            onValue={setUserId}
          />
          <TextField
            id="roomId"
            label="Room id"
            hint="Empty for a direct conversation."
            error={error}
            value={roomId}
            onValue={setRoomId}
          />
        </div>
        <ErrorBox error={error} />
        <button type="submit" disabled={busy || !text.trim()}>
          Preview
        </button>
      </form>
      {preview && <PreviewView text={preview.text} preview={preview.data} agent={agent} />}
    </section>
  );
}

// PreviewView shows a preview section by section.
function PreviewView({ text, preview: p, agent }: { text: string; preview: Preview; agent: Agent }) {
  return (
    <div class="preview" aria-live="polite">
      <h3 class="visually-hidden">The context for “{text}”</h3>
      <dl class="totals">
        <div>
          <dt>Estimated tokens</dt>
          <dd id="context-tokens">{p.estimatedTokens}</dd>
        </div>
        <div>
          <dt>History messages</dt>
          <dd>{p.history.length}</dd>
        </div>
        <div>
          <dt>Memories</dt>
          <dd>{p.memories.length}</dd>
        </div>
        <div>
          <dt>Knowledge chunks</dt>
          <dd>{p.knowledge.length}</dd>
        </div>
        <div>
          <dt>Tools</dt>
          <dd>{p.tools.length}</dd>
        </div>
      </dl>
      <section aria-labelledby="context-system-title" id="context-system">
        <h3 id="context-system-title">System prompt</h3>
        <details>
          <summary>Show the whole system prompt ({p.system.length.toLocaleString()} characters)</summary>
          <pre class="json prompt">{p.system}</pre>
        </details>
      </section>
      <Part id="context-history" title="History" empty="None: this is the conversation's first message.">
        {p.history.length > 0 && (
          <ol class="transcript">
            {p.history.map((m, i) => (
              <li key={i} class={`turn ${m.role}`}>
                <span class="who">{m.role === "user" ? "user" : agent.name}</span>
                <p class="text">{m.text}</p>
              </li>
            ))}
          </ol>
        )}
      </Part>
      <Part
        id="context-memories"
        title="Memories"
        empty={
          agent.memory?.longTermEnabled
            ? "None recalled for this message."
            : "None: long-term memory is off for this agent."
        }
      >
        {p.memories.length > 0 && (
          <ul class="recalled">
            {p.memories.map((m) => (
              <li key={m.id}>
                {m.text} <span class="meta">{m.id}</span>
              </li>
            ))}
          </ul>
        )}
      </Part>
      <Part
        id="context-knowledge"
        title="Knowledge"
        empty="None: no document chunk is relevant, or there are no documents."
      >
        {p.knowledge.length > 0 && (
          <ul class="recalled">
            {p.knowledge.map((k, i) => (
              <li key={i}>
                <strong class="document">{k.name}</strong> <span class="meta">{k.documentId}</span>
                <pre class="json chunk">{k.text}</pre>
              </li>
            ))}
          </ul>
        )}
      </Part>
      <Part id="context-tools" title="Tools" empty="None offered.">
        {p.tools.length > 0 && (
          <ul class="recalled">
            {p.tools.map((t) => (
              <li key={t.name}>
                <code>{t.name}</code> <span class="meta">{t.source}</span>
              </li>
            ))}
          </ul>
        )}
      </Part>
    </div>
  );
}

// Part is one section of the preview, with a line when it is empty.
function Part(props: { id: string; title: string; empty: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={`${props.id}-title`} id={props.id}>
      <h3 id={`${props.id}-title`}>{props.title}</h3>
      {props.children || <p class="meta">{props.empty}</p>}
    </section>
  );
}
