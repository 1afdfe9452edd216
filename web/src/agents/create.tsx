// create.tsx: the new agent page: from a character file (dropped or
// chosen), or from the agent form.
import { useState } from "preact/hooks";
import { api, call, type Schemas } from "../api";
import { useAction } from "../hooks";
import { DropZone, go } from "../ui";
import { type Draft, emptyDraft, membersOf } from "./draft";
import { AgentForm } from "./form";

export function AgentCreate() {
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const { busy, error, run, setError } = useAction();
  const [character, setCharacter] = useState<{ file: string; body: Schemas["AgentCreateRequest"] }>();

  const create = (body: Schemas["AgentCreateRequest"]) =>
    run(async () => {
      const created = await call(api.POST("/agents", { body }));
      go(`/agents/${created.data.id}`);
    });

  const load = async (file: File | undefined) => {
    if (!file) return;
    setError(undefined);
    try {
      const body = JSON.parse(await file.text()) as Schemas["AgentCreateRequest"];
      if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error("not a JSON object");
      setCharacter({ file: file.name, body });
    } catch (err) {
      setCharacter(undefined);
      setError(new Error(`${file.name} is not a character file: ${String(err)}`));
    }
  };

  return (
    <section aria-labelledby="create-title">
      <h1 id="create-title">New agent</h1>
      <DropZone onDrop={(file) => void load(file)}>
        <label for="character-file">
          Drop an ElizaOS <code>*.character.json</code> here, or choose one:
        </label>
        <input
          id="character-file"
          type="file"
          accept=".json,application/json"
          onChange={(e) => void load(e.currentTarget.files?.[0])}
        />
        {character && (
          <div class="character">
            <p>
              <strong>{String(character.body.name ?? "(no name)")}</strong> from {character.file}:{" "}
              {Object.keys(character.body).length} members.
            </p>
            <button type="button" disabled={busy} onClick={() => void create(character.body)}>
              Create from character file
            </button>
          </div>
        )}
      </DropZone>
      <h2>Or fill in the form</h2>
      <AgentForm
        draft={draft}
        onChange={setDraft}
        error={error}
        busy={busy}
        submit="Create agent"
        onSubmit={() => void create({ ...membersOf(draft), name: draft.name })}
      />
    </section>
  );
}
