// playground.tsx: an agent's playground: its model, parameters, character
// and tools beside the chat. Edits are applied to the agent (Update Agent)
// with the next message, or at once with Apply, so what the panel shows is
// what the next reply is made with.
import { useEffect, useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { providers } from "./agents/form";
import { Chat } from "./chat";
import { useAction, useQuery } from "./hooks";
import { ProviderNotice } from "./status";
import { ErrorBox, SelectField, TextArea, TextField, lines } from "./ui";

// Settings are what the panel edits, as its inputs hold them ("" for a
// parameter left to the provider's default).
type Settings = {
  modelProvider: Schemas["ModelProvider"] | "";
  model: string;
  temperature: string;
  maxTokens: string;
  topP: string;
  maxToolSteps: string;
  system: string;
  bio: string;
};

// parameters are the model settings the panel shows, with their bounds.
const parameters = [
  { key: "temperature", label: "Temperature", min: 0, max: 2, step: 0.1 },
  { key: "topP", label: "Top P", min: 0, max: 1, step: 0.05 },
  { key: "maxTokens", label: "Max tokens", min: 1, max: 1000000, step: 1 },
  { key: "maxToolSteps", label: "Tool steps", min: 0, max: 20, step: 1 },
] as const;

export function settingsOf(a: Agent): Settings {
  const ms = a.modelSettings ?? {};
  const text = (v: number | undefined) => (v === undefined ? "" : String(v));
  return {
    modelProvider: a.modelProvider,
    model: a.model,
    temperature: text(ms.temperature),
    maxTokens: text(ms.maxTokens),
    topP: text(ms.topP),
    maxToolSteps: text(ms.maxToolSteps),
    system: a.system ?? "",
    bio: a.bio.join("\n"),
  };
}

// changesOf is the update that makes agent match s: only the members that
// differ (each replaces the stored one whole, so modelSettings keeps the
// parameters the panel does not show). It throws when a parameter is not
// a number.
export function changesOf(s: Settings, agent: Agent): Schemas["AgentUpdateRequest"] {
  const before = settingsOf(agent);
  const out: Schemas["AgentUpdateRequest"] = {};
  if (s.modelProvider !== before.modelProvider) out.modelProvider = s.modelProvider;
  if (s.model.trim() !== before.model) out.model = s.model.trim();
  if (s.system !== before.system) out.system = s.system;
  if (s.bio !== before.bio) out.bio = lines(s.bio);
  if (parameters.some(({ key }) => s[key].trim() !== before[key])) {
    // Typed as the contract's, so that a member the panel does not show
    // (price, say) is kept whatever its shape.
    const ms: Schemas["ModelSettings"] = { ...agent.modelSettings };
    for (const { key, label } of parameters) {
      const v = s[key].trim();
      if (!v) delete ms[key];
      else if (Number.isFinite(Number(v))) ms[key] = Number(v);
      else throw new Error(`${label} must be a number.`);
    }
    out.modelSettings = ms;
  }
  return out;
}

// Playground is the chat of an agent beside its settings; onChanged is
// called when the agent changed (settings applied, a turn answered).
export function Playground({ agent, onChanged }: { agent: Agent; onChanged: () => void }) {
  const [draft, setDraft] = useState(settingsOf(agent));
  const applying = useAction();
  const [applied, setApplied] = useState<string>();
  // A reload of the agent (after each turn, for its metrics) resets the
  // panel only when the settings it shows changed, so an edit survives.
  const shown = JSON.stringify(settingsOf(agent));
  useEffect(() => setDraft(settingsOf(agent)), [shown]);

  let changes: Schemas["AgentUpdateRequest"] = {};
  let problem: Error | undefined;
  try {
    changes = changesOf(draft, agent);
  } catch (err) {
    problem = err as Error;
  }
  const pending = problem !== undefined || Object.keys(changes).length > 0;

  // apply saves the panel's edits; it throws when they were refused, so a
  // message is not sent with settings other than those shown.
  const apply = async () => {
    if (!pending) return;
    if (problem) {
      applying.setError(problem);
      throw new Error(`The settings were not applied: ${problem.message}`);
    }
    let refused: unknown;
    await applying.run(async () => {
      try {
        const r = await call(
          api.PATCH("/agents/{agentId}", { params: { path: { agentId: agent.id } }, body: changes }),
        );
        setApplied(`Applied: ${r.data.changes.join(", ") || "nothing changed"}.`);
        onChanged();
      } catch (err) {
        refused = err;
        throw err;
      }
    });
    if (refused) throw new Error("The settings were not applied: see why under Settings.");
  };

  const [wide] = useState(() => matchMedia("(min-width: 1001px)").matches);
  const set = (patch: Partial<Settings>) => (setApplied(undefined), setDraft({ ...draft, ...patch }));
  return (
    <div class="playground">
      {/* Open beside the chat on a wide screen; folded above it on a
          phone, where it would push the chat a screen down. */}
      <details class="config card" open={wide}>
        <summary>
          <h2 id="config-title">Settings</h2>
          {pending && <span class="status running">changed</span>}
        </summary>
        <SelectField
          id="modelProvider"
          label="Model provider"
          error={applying.error}
          options={[{ value: "", label: "server default" }, ...providers]}
          value={draft.modelProvider}
          onValue={(modelProvider) => set({ modelProvider })}
        />
        <TextField
          id="model"
          label="Model"
          hint="Empty for the provider's default."
          error={applying.error}
          value={draft.model}
          onValue={(model) => set({ model })}
        />
        <div class="pair">
          {parameters.map((p) => (
            <TextField
              key={p.key}
              id={p.key}
              label={p.label}
              type="number"
              inputMode="decimal"
              min={p.min}
              max={p.max}
              step={p.step}
              placeholder="default"
              value={draft[p.key]}
              onValue={(v) => set({ [p.key]: v })}
            />
          ))}
        </div>
        <TextArea
          id="system"
          label="System prompt"
          hint="The character's own; bio, memories and knowledge are added to it."
          error={applying.error}
          rows={5}
          value={draft.system}
          onValue={(system) => set({ system })}
        />
        <TextArea
          id="bio"
          label="Bio"
          hint="One statement a line."
          error={applying.error}
          rows={3}
          value={draft.bio}
          onValue={(bio) => set({ bio })}
        />
        <ToolNames agent={agent} />
        {pending && (
          <p class="pending" role="status">
            Changed: applied with the next message.
          </p>
        )}
        {applied && !pending && (
          <p class="ok" role="status">
            {applied}
          </p>
        )}
        <ErrorBox error={applying.error} />
        <button type="button" disabled={!pending || applying.busy} onClick={() => void apply().catch(() => {})}>
          Apply now
        </button>
        <button type="button" class="quiet" disabled={!pending} onClick={() => setDraft(settingsOf(agent))}>
          Undo changes
        </button>
      </details>
      <div class="playground-chat">
        <ProviderNotice agent={agent} />
        {agent.status !== "active" && (
          <div class="notice" role="note">
            <p>
              <strong>
                {agent.name} is {agent.status}
              </strong>
              {agent.statusReason && <>: {agent.statusReason}</>}. Messages are refused until its status is active: set
              it in <a href={`#/agents/${agent.id}`}>Settings</a>.
            </p>
          </div>
        )}
        <Chat agent={agent} beforeSend={apply} onTurn={onChanged} />
      </div>
    </div>
  );
}

// ToolNames lists the tools the next turn offers; they are edited in
// Settings (actions and MCP servers).
function ToolNames({ agent }: { agent: Agent }) {
  const tools = useQuery(
    (signal) =>
      call(api.GET("/agents/{agentId}/tools", { params: { path: { agentId: agent.id } }, signal })).then((r) => r.data),
    [agent.id, agent.updatedAt],
  );
  const offered = tools.data?.items.filter((t) => t.offered) ?? [];
  return (
    <div class="field">
      <span class="label">Tools</span>
      <ErrorBox error={tools.error} />
      {tools.data && offered.length === 0 && <p class="hint">None offered.</p>}
      {offered.length > 0 && (
        <ul class="tool-list">
          {offered.map((t) => (
            <li key={t.name} title={t.description}>
              <code>{t.name}</code>
            </li>
          ))}
        </ul>
      )}
      <small class="hint">
        Add actions and MCP servers in <a href={`#/agents/${agent.id}`}>Settings</a>.
      </small>
    </div>
  );
}
