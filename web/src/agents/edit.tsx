// edit.tsx: the agent's settings page: its spend against its budgets, the
// agent form, the whole agent as JSON, its tools, export and delete.
import { useEffect, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas } from "../api";
import { type Action, useAction } from "../hooks";
import { AgentSpend } from "../spend";
import { Confirm, ErrorBox, go } from "../ui";
import { type Draft, draftOf, membersOf } from "./draft";
import { AgentForm } from "./form";
import { AgentTools } from "./tools";
import { ExportAgent } from "./transfer";

// readOnlyMembers are the members of Get Agent a PATCH must not send back.
const readOnlyMembers = ["id", "createdAt", "updatedAt", "metrics", "apiEndpoint"] as const;

export function AgentEdit({ agent, onSaved }: { agent: Agent; onSaved: () => void }) {
  const [draft, setDraft] = useState<Draft>(draftOf(agent));
  const [json, setJSON] = useState(JSON.stringify(agent, null, 2));
  // The form and the JSON save one at a time, each showing its own
  // failure.
  const formSave = useAction();
  const jsonSave = useAction();
  const busy = formSave.busy || jsonSave.busy;
  const [saved, setSaved] = useState<string>();

  // The page reloads the agent on each tab for its metrics: the form is
  // reset only when a member it shows changed, so a reload that lands while
  // someone edits does not undo their edit.
  const shown = JSON.stringify(draftOf(agent));
  useEffect(() => setDraft(draftOf(agent)), [shown]);
  useEffect(() => setJSON(JSON.stringify(agent, null, 2)), [agent]);

  const save = (body: Schemas["AgentUpdateRequest"], action: Action) => {
    formSave.setError(undefined);
    jsonSave.setError(undefined);
    return action.run(async () => {
      setSaved(undefined);
      const r = await call(api.PATCH("/agents/{agentId}", { params: { path: { agentId: agent.id } }, body }));
      setSaved(r.data.changes.length ? `Saved: ${r.data.changes.join(", ")} changed.` : "Saved: nothing changed.");
      onSaved();
    });
  };

  const saveJSON = () => {
    let whole: Record<string, unknown>;
    try {
      whole = JSON.parse(json) as Record<string, unknown>;
    } catch (err) {
      jsonSave.setError(new Error(`Not valid JSON: ${String(err)}`));
      return;
    }
    for (const m of readOnlyMembers) delete whole[m];
    void save(whole as Schemas["AgentUpdateRequest"], jsonSave);
  };

  return (
    <div class="edit">
      <AgentSpend agent={agent} />
      <section aria-labelledby="form-title">
        <h2 id="form-title">Edit</h2>
        <AgentForm
          draft={draft}
          onChange={setDraft}
          error={formSave.error}
          busy={busy}
          submit="Save"
          withStatus
          agentId={agent.id}
          onSubmit={() => void save({ ...membersOf(draft, agent), status: draft.status }, formSave)}
        />
        {saved && (
          <p class="ok" role="status">
            {saved}
          </p>
        )}
      </section>
      <section aria-labelledby="json-title">
        <h2 id="json-title">The whole agent as JSON</h2>
        <label for="agent-json" class="hint">
          Edit any member and save; read-only members ({readOnlyMembers.join(", ")}) are left out of the update.
        </label>
        <textarea
          id="agent-json"
          class="json"
          rows={24}
          spellcheck={false}
          value={json}
          onInput={(e) => setJSON(e.currentTarget.value)}
        />
        {jsonSave.error instanceof ApiFailure && jsonSave.error.field && (
          <p class="field-error" role="alert">
            In member <code>{jsonSave.error.field}</code>:
          </p>
        )}
        <ErrorBox error={jsonSave.error} />
        <button type="button" disabled={busy} onClick={saveJSON}>
          Save JSON
        </button>
      </section>
      <AgentTools agent={agent} />
      <ExportAgent agent={agent} />
      <DeleteAgent agent={agent} />
    </div>
  );
}

function DeleteAgent({ agent }: { agent: Agent }) {
  const { error, run } = useAction();
  const remove = () =>
    run(async () => {
      await call(api.DELETE("/agents/{agentId}", { params: { path: { agentId: agent.id } } }));
      go("/agents");
    });
  return (
    <section class="danger" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete</h2>
      <Confirm
        label="Delete agent…"
        question={
          <>
            Delete <strong>{agent.name}</strong> and all its conversations? This cannot be undone.
          </>
        }
        yes={`Yes, delete ${agent.name}`}
        onYes={remove}
      />
      <ErrorBox error={error} />
    </section>
  );
}
