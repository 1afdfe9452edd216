// form.tsx: the agent form of create and edit, and its memory section;
// its tools section is form-tools.tsx, the agents it may ask form-asks.tsx,
// its budget form-budget.tsx.
import { useState } from "preact/hooks";
import type { Schemas } from "../api";
import { Choices, ErrorBox, Group, SelectField, TextArea, TextField, useFocusRefused } from "../ui";
import { type Draft, type SectionProps, type MemoryDraft, problemOf } from "./draft";
import { AsksFields } from "./form-asks";
import { BudgetFields } from "./form-budget";
import { ToolsFields } from "./form-tools";

// providers are the model providers an agent may name.
export const providers: Schemas["ModelProvider"][] = ["openai", "anthropic", "groq", "google", "ollama"];
const platforms: Schemas["Platform"][] = ["discord", "twitter", "telegram"];

// AgentForm is the form of both create and edit.
export function AgentForm(props: {
  draft: Draft;
  onChange: (d: Draft) => void;
  onSubmit: () => void;
  error: unknown;
  busy: boolean;
  submit: string;
  withStatus?: boolean;
  // agentId is the agent edited; undefined when creating.
  agentId?: string;
}) {
  const { draft: d, onChange } = props;
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  // problem is what the form refused before sending, shown as the API's
  // errors are; a new submit clears it.
  const [problem, setProblem] = useState<Error>();
  const error = problem ?? props.error;
  useFocusRefused(props.error);
  return (
    <form
      class="agent-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        const p = problemOf(d);
        setProblem(p?.error);
        if (p) document.getElementById(p.id)?.focus();
        else props.onSubmit();
      }}
    >
      <TextField id="name" label="Name" error={error} required value={d.name} onValue={(name) => set({ name })} />
      <TextArea
        id="bio"
        label="Bio"
        hint="One statement a line."
        error={error}
        rows={3}
        value={d.bio}
        onValue={(bio) => set({ bio })}
      />
      <div class="pair">
        <SelectField
          id="modelProvider"
          label="Model provider"
          error={error}
          options={[{ value: "", label: "server default" }, ...providers]}
          value={d.modelProvider}
          onValue={(modelProvider) => set({ modelProvider })}
        />
        <TextField
          id="model"
          label="Model"
          hint="Empty for the provider's default."
          error={error}
          value={d.model}
          onValue={(model) => set({ model })}
        />
      </div>
      <TextField id="personality" label="Tone" error={error} value={d.tone} onValue={(tone) => set({ tone })} />
      <TextArea
        id="goals"
        label="Goals"
        hint="One a line."
        error={error}
        rows={2}
        value={d.goals}
        onValue={(goals) => set({ goals })}
      />
      <TextArea
        id="knowledge"
        label="Knowledge"
        hint="One statement a line."
        error={error}
        rows={2}
        value={d.knowledge}
        onValue={(knowledge) => set({ knowledge })}
      />
      <Choices
        id="clients"
        legend="Platforms"
        options={platforms.map((p) => ({ value: p, label: p }))}
        chosen={d.clients}
        onChange={(clients) => set({ clients })}
        error={error}
      />
      <MemoryFields draft={d} onChange={onChange} error={error} />
      <ToolsFields draft={d} onChange={onChange} error={error} />
      <AsksFields draft={d} onChange={onChange} error={error} self={props.agentId} />
      <BudgetFields draft={d} onChange={onChange} error={error} />
      {props.withStatus && (
        <SelectField
          id="status"
          label="Status"
          error={error}
          options={["active", "inactive"] as const}
          value={d.status}
          onValue={(status) => set({ status })}
        />
      )}
      <label class="inline">
        <input
          id="deleteProtection"
          type="checkbox"
          checked={d.deleteProtection}
          onChange={(e) => set({ deleteProtection: e.currentTarget.checked })}
        />
        Protect from deletion
      </label>
      <ErrorBox error={error} />
      <button type="submit" disabled={props.busy}>
        {props.submit}
      </button>
    </form>
  );
}

// memorySwitches are the memory member's switches, as the form shows them.
const memorySwitches: { key: keyof MemoryDraft; label: string }[] = [
  {
    key: "longTermEnabled",
    label: "Long-term memory: recall memories into each turn, and give the model memory_save and memory_search",
  },
  { key: "rememberUsers", label: "Keep each memory to the user it came from (else every memory is agent-wide)" },
  { key: "rememberConversations", label: "Summarize what slides out of a conversation's window, and keep the summary" },
];

// MemoryFields is the form's memory section: the switches of the memory
// member (the JSON edits the others).
function MemoryFields({ draft: d, onChange, error }: SectionProps) {
  return (
    <Group
      id="memory"
      legend="Memory"
      hint="History bounds (shortTermContext, maxContextTokens) are edited in the JSON."
      error={error}
    >
      {memorySwitches.map(({ key, label }) => (
        <label class="inline" key={key}>
          <input
            id={`memory-${key}`}
            type="checkbox"
            checked={d.memory[key]}
            onChange={(e) => onChange({ ...d, memory: { ...d.memory, [key]: e.currentTarget.checked } })}
          />
          {label}
        </label>
      ))}
    </Group>
  );
}
