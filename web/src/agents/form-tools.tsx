// form-tools.tsx: the agent form's tools section: the actions (a handler
// URL makes one a tool), how many model calls of a turn may use them, and
// the MCP servers (form-mcp.tsx).
import { Group, JsonArea, TextField } from "../ui";
import { type ActionDraft, type Draft, type SectionProps, emptyAction, parametersOf } from "./draft";
import { McpFields } from "./form-mcp";

// ToolsFields is the form's tools section: the actions with their handler
// and parameters, maxToolSteps and the MCP servers.
export function ToolsFields({ draft: d, onChange, error }: SectionProps) {
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  const setAction = (i: number, patch: Partial<ActionDraft>) =>
    set({ actions: d.actions.map((a, j) => (j === i ? { ...a, ...patch } : a)) });
  return (
    <fieldset class="tools-fields">
      <legend>Tools</legend>
      <Group
        id="actions"
        legend="Actions"
        hint="An action whose handler is an http or https URL is a tool the model can call: agentd POSTs the arguments there, signed."
        error={error}
      >
        {d.actions.map((a, i) => (
          <div class="row-group" key={i}>
            <div class="pair">
              <TextField
                id={`action-${i}-name`}
                label="Name"
                error={error}
                value={a.name}
                onValue={(name) => setAction(i, { name })}
              />
              <TextField
                id={`action-${i}-handler`}
                label="Handler URL"
                error={error}
                type="url"
                placeholder="https://tools.example.com/price"
                value={a.handler}
                onValue={(handler) => setAction(i, { handler })}
              />
            </div>
            <TextField
              id={`action-${i}-description`}
              label="Description"
              error={error}
              value={a.description}
              onValue={(description) => setAction(i, { description })}
            />
            <ParametersField
              id={`action-${i}-parameters`}
              value={a.parameters}
              onChange={(parameters) => setAction(i, { parameters })}
            />
            <label class="inline">
              <input
                id={`action-${i}-approval`}
                type="checkbox"
                checked={a.requiresApproval}
                onChange={(e) => setAction(i, { requiresApproval: e.currentTarget.checked })}
              />
              Ask a person first: each call waits in Approvals until approved or denied
            </label>
            <button
              type="button"
              class="quiet small"
              onClick={() => set({ actions: d.actions.filter((_, j) => j !== i) })}
            >
              Remove action {a.name}
            </button>
          </div>
        ))}
        <button
          id="add-action"
          type="button"
          class="quiet"
          onClick={() => set({ actions: [...d.actions, emptyAction] })}
        >
          Add action
        </button>
      </Group>
      <TextField
        id="modelSettings"
        label="Tool steps per turn"
        hint="Model calls of one turn that may use tools, 0 to 20; 0 offers none. Empty for the default, 5."
        error={error}
        type="number"
        min={0}
        max={20}
        step={1}
        value={d.maxToolSteps}
        onValue={(maxToolSteps) => set({ maxToolSteps })}
      />
      <McpFields draft={d} onChange={onChange} error={error} />
    </fieldset>
  );
}

// ParametersField is an action's JSON Schema, checked as it is typed.
function ParametersField({ id, value, onChange }: { id: string; value: string; onChange: (v: string) => void }) {
  const p = parametersOf(value);
  return (
    <JsonArea
      id={id}
      label="Parameters (JSON Schema)"
      hint="A JSON object; empty for one string argument, input."
      placeholder={'{"type": "object", "properties": {"symbol": {"type": "string"}}}'}
      problem={p instanceof Error ? p.message : undefined}
      value={value}
      onValue={onChange}
    />
  );
}
