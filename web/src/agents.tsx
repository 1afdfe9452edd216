// agents.tsx: the agents list, creating an agent (form or character file),
// editing one (form and JSON) and deleting one.
import { useEffect, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas } from "./api";
import { useQuery } from "./hooks";
import { Choices, Confirm, ErrorBox, Field, ListTable, go, lines, useFocusRefused, when } from "./ui";

const statuses: Schemas["AgentStatus"][] = ["active", "inactive", "error"];
const sortFields: Schemas["AgentSortField"][] = ["createdAt", "name", "status"];
const providers: Schemas["ModelProvider"][] = ["openai", "anthropic", "groq", "google", "ollama"];
const platforms: Schemas["Platform"][] = ["discord", "twitter", "telegram"];

export function AgentList() {
  const [status, setStatus] = useState<Schemas["AgentStatus"] | "">("");
  const [sortBy, setSortBy] = useState<Schemas["AgentSortField"]>("createdAt");
  const [order, setOrder] = useState<Schemas["SortOrder"]>("desc");
  const [page, setPage] = useState(1);
  const list = useQuery(
    (signal) =>
      call(
        api.GET("/agents", {
          params: { query: { page, limit: 10, sortBy, order, ...(status ? { status } : {}) } },
          signal,
        }),
      ).then((r) => r.data),
    [status, sortBy, order, page],
  );

  return (
    <section aria-labelledby="agents-title">
      <div class="title-row">
        <h1 id="agents-title">Agents</h1>
        <a class="button" href="#/agents/new">
          New agent
        </a>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(e) => (setStatus(e.currentTarget.value as typeof status), setPage(1))}>
            <option value="">all</option>
            {statuses.map((s) => (
              <option key={s} value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Sort by
          <select value={sortBy} onChange={(e) => setSortBy(e.currentTarget.value as typeof sortBy)}>
            {sortFields.map((s) => (
              <option key={s} value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Order
          <select value={order} onChange={(e) => setOrder(e.currentTarget.value as typeof order)}>
            <option value="asc">ascending</option>
            <option value="desc">descending</option>
          </select>
        </label>
      </form>
      <ListTable
        items={list.data?.agents}
        error={list.error}
        empty="No agents yet. Create one, or drop a character file on “New agent”."
        columns={["Name", "Status", "Model", "Created"]}
        rowKey={(a) => a.id}
        row={(a) => (
          <tr>
            <td>
              <a href={`#/agents/${a.id}`}>{a.name}</a>
            </td>
            <td>
              <span class={`status ${a.status}`}>{a.status}</span>
            </td>
            <td>
              {a.modelProvider}/{a.model}
            </td>
            <td>{when(a.createdAt)}</td>
          </tr>
        )}
        pagination={list.data?.pagination}
        onPage={setPage}
      />
    </section>
  );
}

// Draft is what the agent form edits; the API's members are built from it.
type Draft = {
  name: string;
  bio: string;
  modelProvider: Schemas["ModelProvider"] | "";
  model: string;
  tone: string;
  goals: string;
  knowledge: string;
  clients: Schemas["Platform"][];
  deleteProtection: boolean;
  status: Schemas["AgentStatusInput"];
};

const emptyDraft: Draft = {
  name: "",
  bio: "",
  modelProvider: "",
  model: "",
  tone: "",
  goals: "",
  knowledge: "",
  clients: [],
  deleteProtection: false,
  status: "active",
};

function draftOf(a: Agent): Draft {
  return {
    name: a.name,
    bio: a.bio.join("\n"),
    modelProvider: a.modelProvider,
    model: a.model,
    tone: a.personality.tone ?? "",
    goals: a.goals.join("\n"),
    knowledge: a.knowledge.join("\n"),
    clients: a.clients,
    deleteProtection: a.deleteProtection,
    status: a.status === "inactive" ? "inactive" : "active",
  };
}

// membersOf is the request body the form stands for; personality keeps the
// members the form does not show.
function membersOf(d: Draft, personality: Schemas["Personality"] = {}): Schemas["AgentUpdateRequest"] {
  return {
    name: d.name,
    bio: lines(d.bio),
    modelProvider: d.modelProvider,
    ...(d.model.trim() ? { model: d.model.trim() } : {}),
    personality: { ...personality, tone: d.tone },
    goals: lines(d.goals),
    knowledge: lines(d.knowledge),
    clients: d.clients,
    deleteProtection: d.deleteProtection,
  };
}

// AgentForm is the form of both create and edit.
function AgentForm(props: {
  draft: Draft;
  onChange: (d: Draft) => void;
  onSubmit: () => void;
  error: unknown;
  busy: boolean;
  submit: string;
  withStatus?: boolean;
}) {
  const { draft: d, onChange, error } = props;
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  useFocusRefused(error);
  return (
    <form
      class="agent-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <Field id="name" label="Name" error={error}>
        {(desc, invalid) => (
          <input
            id="name"
            required
            value={d.name}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ name: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id="bio" label="Bio" hint="One statement a line." error={error}>
        {(desc, invalid) => (
          <textarea
            id="bio"
            rows={3}
            value={d.bio}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ bio: e.currentTarget.value })}
          />
        )}
      </Field>
      <div class="pair">
        <Field id="modelProvider" label="Model provider" error={error}>
          {(desc, invalid) => (
            <select
              id="modelProvider"
              value={d.modelProvider}
              aria-describedby={desc}
              aria-invalid={invalid}
              onChange={(e) => set({ modelProvider: e.currentTarget.value as Draft["modelProvider"] })}
            >
              <option value="">server default</option>
              {providers.map((p) => (
                <option key={p} value={p}>{p}</option>
              ))}
            </select>
          )}
        </Field>
        <Field id="model" label="Model" hint="Empty for the provider's default." error={error}>
          {(desc, invalid) => (
            <input
              id="model"
              value={d.model}
              aria-describedby={desc}
              aria-invalid={invalid}
              onInput={(e) => set({ model: e.currentTarget.value })}
            />
          )}
        </Field>
      </div>
      <Field id="personality" label="Tone" error={error}>
        {(desc, invalid) => (
          <input
            id="personality"
            value={d.tone}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ tone: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id="goals" label="Goals" hint="One a line." error={error}>
        {(desc, invalid) => (
          <textarea
            id="goals"
            rows={2}
            value={d.goals}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ goals: e.currentTarget.value })}
          />
        )}
      </Field>
      <Field id="knowledge" label="Knowledge" hint="One statement a line." error={error}>
        {(desc, invalid) => (
          <textarea
            id="knowledge"
            rows={2}
            value={d.knowledge}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ knowledge: e.currentTarget.value })}
          />
        )}
      </Field>
      <Choices
        id="clients"
        legend="Platforms"
        options={platforms.map((p) => ({ value: p, label: p }))}
        chosen={d.clients}
        onChange={(clients) => set({ clients })}
        error={error}
      />
      {props.withStatus && (
        <Field id="status" label="Status" error={error}>
          {(desc) => (
            <select
              id="status"
              value={d.status}
              aria-describedby={desc}
              onChange={(e) => set({ status: e.currentTarget.value as Draft["status"] })}
            >
              <option value="active">active</option>
              <option value="inactive">inactive</option>
            </select>
          )}
        </Field>
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

export function AgentCreate() {
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [character, setCharacter] = useState<{ file: string; body: Schemas["AgentCreateRequest"] }>();
  const [dragging, setDragging] = useState(false);

  const create = async (body: Schemas["AgentCreateRequest"]) => {
    setBusy(true);
    setError(undefined);
    try {
      const created = await call(api.POST("/agents", { body }));
      go(`/agents/${created.data.id}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

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
      <div
        class={dragging ? "dropzone dragging" : "dropzone"}
        onDragOver={(e) => (e.preventDefault(), setDragging(true))}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          void load(e.dataTransfer?.files[0]);
        }}
      >
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
      </div>
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

// readOnlyMembers are the members of Get Agent a PATCH must not send back.
const readOnlyMembers = ["id", "createdAt", "updatedAt", "metrics", "apiEndpoint"] as const;

export function AgentEdit({ agent, onSaved }: { agent: Agent; onSaved: () => void }) {
  const [draft, setDraft] = useState<Draft>(draftOf(agent));
  const [json, setJSON] = useState(JSON.stringify(agent, null, 2));
  const [error, setError] = useState<unknown>();
  const [jsonError, setJSONError] = useState<unknown>();
  const [saved, setSaved] = useState<string>();
  const [busy, setBusy] = useState(false);

  // The page reloads the agent on each tab for its metrics: the form is
  // reset only when a member it shows changed, so a reload that lands while
  // someone edits does not undo their edit.
  const shown = JSON.stringify(draftOf(agent));
  useEffect(() => setDraft(draftOf(agent)), [shown]);
  useEffect(() => setJSON(JSON.stringify(agent, null, 2)), [agent]);

  const save = async (body: Schemas["AgentUpdateRequest"], onError: (e: unknown) => void) => {
    setBusy(true);
    setError(undefined);
    setJSONError(undefined);
    setSaved(undefined);
    try {
      const r = await call(api.PATCH("/agents/{agentId}", { params: { path: { agentId: agent.id } }, body }));
      setSaved(r.data.changes.length ? `Saved: ${r.data.changes.join(", ")} changed.` : "Saved: nothing changed.");
      onSaved();
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  };

  const saveJSON = () => {
    let whole: Record<string, unknown>;
    try {
      whole = JSON.parse(json) as Record<string, unknown>;
    } catch (err) {
      setJSONError(new Error(`Not valid JSON: ${String(err)}`));
      return;
    }
    for (const m of readOnlyMembers) delete whole[m];
    void save(whole as Schemas["AgentUpdateRequest"], setJSONError);
  };

  return (
    <div class="edit">
      <section aria-labelledby="form-title">
        <h2 id="form-title">Edit</h2>
        <AgentForm
          draft={draft}
          onChange={setDraft}
          error={error}
          busy={busy}
          submit="Save"
          withStatus
          onSubmit={() => void save({ ...membersOf(draft, agent.personality), status: draft.status }, setError)}
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
        {jsonError instanceof ApiFailure && jsonError.field && (
          <p class="field-error" role="alert">
            In member <code>{jsonError.field}</code>:
          </p>
        )}
        <ErrorBox error={jsonError} />
        <button type="button" disabled={busy} onClick={saveJSON}>
          Save JSON
        </button>
      </section>
      <DeleteAgent agent={agent} />
    </div>
  );
}

function DeleteAgent({ agent }: { agent: Agent }) {
  const [error, setError] = useState<unknown>();
  const remove = async () => {
    setError(undefined);
    try {
      await call(api.DELETE("/agents/{agentId}", { params: { path: { agentId: agent.id } } }));
      go("/agents");
    } catch (err) {
      setError(err);
    }
  };
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
