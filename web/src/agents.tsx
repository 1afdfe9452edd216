// agents.tsx: the agents list, creating an agent (form or character file),
// importing one, editing one (form and JSON), its tools, exporting and
// deleting one.
import { useEffect, useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas } from "./api";
import { useQuery } from "./hooks";
import { Choices, Confirm, ErrorBox, Field, Group, ListTable, go, lines, useFocusRefused, when } from "./ui";

const statuses: Schemas["AgentStatus"][] = ["active", "inactive", "error"];
const sortFields: Schemas["AgentSortField"][] = ["createdAt", "name", "status"];
const providers: Schemas["ModelProvider"][] = ["openai", "anthropic", "groq", "google", "ollama"];
const platforms: Schemas["Platform"][] = ["discord", "twitter", "telegram"];
const transports: Schemas["McpTransport"][] = ["streamable-http", "http", "sse", "stdio"];
// mcpPlugins are the plugins that, enabled, make the agent use its MCP
// servers; the form enables the first.
const mcpPlugins = ["@elizaos/plugin-mcp", "@agentd/plugin-mcp"];
// secretMask is what Get Agent shows for a secret; sent back, it keeps the
// stored value.
const secretMask = "********";

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
      <ImportAgent onImported={list.reload} />
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(e) => (setStatus(e.currentTarget.value as typeof status), setPage(1))}>
            <option value="">all</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sort by
          <select value={sortBy} onChange={(e) => setSortBy(e.currentTarget.value as typeof sortBy)}>
            {sortFields.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
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

// ImportAgent creates an agent from a character file chosen on the list,
// such as one Export wrote on this or another server: Create Agent takes it
// as it is, with the memories, knowledge and history under its agentd
// member.
function ImportAgent({ onImported }: { onImported: () => void }) {
  const [error, setError] = useState<unknown>();
  const [file, setFile] = useState<string>();
  const [created, setCreated] = useState<Schemas["AgentCreated"]>();
  const [busy, setBusy] = useState(false);

  const load = async (input: HTMLInputElement) => {
    const chosen = input.files?.[0];
    if (!chosen) return;
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    setFile(chosen.name);
    try {
      let body: unknown;
      try {
        body = JSON.parse(await chosen.text());
      } catch (err) {
        throw new Error(`${chosen.name} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new Error(`${chosen.name} is not a character file: not a JSON object.`);
      }
      const r = await call(api.POST("/agents", { body: body as Schemas["AgentCreateRequest"] }));
      setCreated(r.data);
      onImported();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      // The same file chosen again is imported again.
      input.value = "";
    }
  };

  return (
    <div class="import" aria-busy={busy}>
      <label for="import-file">Import a character file</label>
      <input
        id="import-file"
        type="file"
        accept=".json,application/json"
        disabled={busy}
        aria-describedby="import-file-hint"
        onChange={(e) => void load(e.currentTarget)}
      />
      <small id="import-file-hint" class="hint">
        A <code>*.character.json</code>, such as an agent's Export from this or another server: the agent is created
        with the memories, knowledge and history the file holds.
      </small>
      {created && (
        <p class="ok" role="status">
          Imported <a href={`#/agents/${created.id}`}>{created.name}</a> from {file}.
        </p>
      )}
      {error instanceof ApiFailure && error.field && (
        <p class="field-error" role="alert">
          In member <code>{error.field}</code> of {file}:
        </p>
      )}
      <ErrorBox error={error} />
    </div>
  );
}

// exportIncludes are what Export adds to the character file, so that an
// import elsewhere moves the agent whole.
const exportIncludes: Schemas["ExportInclude"][] = ["memories", "knowledge", "history"];

// fileName is an agent's name as a file name: characters that no system
// allows in a file name are replaced.
function fileName(name: string): string {
  return `${name.trim().replace(/[\\/:*?"<>|\u0000-\u001f]/g, "_") || "agent"}.character.json`;
}

// count says how many items a list holds, in words.
function count(items: unknown[] | undefined, one: string, many: string): string {
  const n = items?.length ?? 0;
  return `${n} ${n === 1 ? one : many}`;
}

// ExportAgent downloads the agent's character file, with its memories,
// knowledge and history, as <name>.character.json.
function ExportAgent({ agent }: { agent: Agent }) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);

  const download = async () => {
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const r = await call(
        api.GET("/agents/{agentId}/export", {
          params: { path: { agentId: agent.id }, query: { include: exportIncludes } },
          querySerializer: { array: { style: "form", explode: false } },
        }),
      );
      const name = fileName(agent.name);
      const url = URL.createObjectURL(new Blob([`${JSON.stringify(r.data, null, 2)}\n`], { type: "application/json" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      // The download reads the URL after the click returns.
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      const bundle = r.data.agentd ?? {};
      setDone(
        `Exported ${name}: ${count(bundle.memories, "memory", "memories")}, ` +
          `${count(bundle.knowledge, "document", "documents")}, ${count(bundle.history, "conversation", "conversations")}.`,
      );
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="export" aria-labelledby="export-title">
      <h2 id="export-title">Export</h2>
      <p class="hint" id="export-hint">
        The agent as a character file, with its memories, knowledge and history, to import on another server (Import on
        the agents list). Secrets are left out: set them again after an import.
      </p>
      <button id="export" type="button" disabled={busy} aria-describedby="export-hint" onClick={() => void download()}>
        Export
      </button>
      {done && (
        <p class="ok" role="status">
          {done}
        </p>
      )}
      <ErrorBox error={error} />
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
  // The tools: actions (a handler URL makes one a tool), how many model
  // calls of a turn may use them ("" for the default), the MCP servers and
  // whether the MCP plugin that uses them is enabled.
  actions: ActionDraft[];
  maxToolSteps: string;
  servers: ServerDraft[];
  mcp: boolean;
  // The memory switches the form shows; the other members of memory are
  // kept as they are.
  memory: MemoryDraft;
};

type MemoryDraft = Required<Pick<Schemas["Memory"], "longTermEnabled" | "rememberUsers" | "rememberConversations">>;

// memoryDefaults are what the server takes for a missing switch.
const memoryDefaults: MemoryDraft = { longTermEnabled: false, rememberUsers: true, rememberConversations: false };

// ActionDraft is an action; parameters is its JSON Schema as text, checked
// to be a JSON object before the form is sent. examples are kept as they are.
type ActionDraft = { name: string; description: string; examples: string[]; handler: string; parameters: string };

// ServerDraft is an MCP server; rest keeps the members the form does not
// show (a stdio server's command, args and env).
type ServerDraft = {
  name: string;
  type: Schemas["McpTransport"];
  url: string;
  headers: { name: string; value: string }[];
  rest: Omit<Schemas["McpServer"], "type" | "url" | "headers">;
};

const emptyAction: ActionDraft = { name: "", description: "", examples: [], handler: "", parameters: "" };
const emptyServer: ServerDraft = { name: "", type: "streamable-http", url: "", headers: [], rest: {} };

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
  actions: [],
  maxToolSteps: "",
  servers: [],
  mcp: false,
  memory: memoryDefaults,
};

// usesMCP is whether plugins holds an enabled MCP plugin.
function usesMCP(plugins: Schemas["Plugin"][]): boolean {
  return plugins.some((p) => mcpPlugins.includes(p.name) && p.enabled !== false);
}

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
    actions: (a.actions ?? []).map((x) => ({
      name: x.name,
      description: x.description,
      examples: x.examples,
      handler: x.handler ?? "",
      parameters: x.parameters ? JSON.stringify(x.parameters, null, 2) : "",
    })),
    maxToolSteps: a.modelSettings?.maxToolSteps === undefined ? "" : String(a.modelSettings.maxToolSteps),
    servers: Object.entries(a.settings.mcp?.servers ?? {}).map(([name, { type, url, headers, ...rest }]) => ({
      name,
      type,
      url: url ?? "",
      headers: Object.entries(headers ?? {}).map(([h, value]) => ({ name: h, value })),
      rest,
    })),
    mcp: usesMCP(a.plugins),
    memory: {
      longTermEnabled: a.memory?.longTermEnabled ?? memoryDefaults.longTermEnabled,
      rememberUsers: a.memory?.rememberUsers ?? memoryDefaults.rememberUsers,
      rememberConversations: a.memory?.rememberConversations ?? memoryDefaults.rememberConversations,
    },
  };
}

// parametersOf is an action's parameters: undefined when the text is
// empty, the object it holds, or an Error saying why it is not one.
function parametersOf(text: string): Schemas["JSONObject"] | undefined | Error {
  if (!text.trim()) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Schemas["JSONObject"];
    return new Error('The parameters must be a JSON object, such as {"type": "object"}.');
  } catch (err) {
    return new Error(`The parameters are not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// problemOf checks what the API cannot tell apart once it is sent (the
// JSON of parameters, names that would overwrite each other) and returns
// the input to focus and what is wrong, or undefined when all is well.
function problemOf(d: Draft): { id: string; error: Error } | undefined {
  for (const [i, a] of d.actions.entries()) {
    const p = parametersOf(a.parameters);
    if (p instanceof Error)
      return { id: `action-${i}-parameters`, error: new Error(`Action ${a.name || i + 1}: ${p.message}`) };
  }
  const names = new Set<string>();
  for (const [i, sv] of d.servers.entries()) {
    const name = sv.name.trim();
    if (!name || names.has(name)) {
      return {
        id: `server-${i}-name`,
        error: new Error(name ? `Two MCP servers are named ${name}.` : "An MCP server has no name."),
      };
    }
    names.add(name);
    const headers = new Set<string>();
    for (const [j, h] of sv.headers.entries()) {
      const header = h.name.trim();
      if (!header || headers.has(header.toLowerCase())) {
        return {
          id: `server-${i}-header-${j}-name`,
          error: new Error(
            header ? `MCP server ${name} has two ${header} headers.` : `MCP server ${name} has a header with no name.`,
          ),
        };
      }
      headers.add(header.toLowerCase());
    }
  }
  return undefined;
}

// membersOf is the request body the form stands for; agent, when editing,
// keeps the members the form does not show (of personality, settings,
// modelSettings and plugins). Check problemOf(d) first: parameters must
// parse.
function membersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  return {
    ...toolMembersOf(d, agent),
    ...memoryMembersOf(d, agent),
    name: d.name,
    bio: lines(d.bio),
    modelProvider: d.modelProvider,
    ...(d.model.trim() ? { model: d.model.trim() } : {}),
    personality: { ...agent?.personality, tone: d.tone },
    goals: lines(d.goals),
    knowledge: lines(d.knowledge),
    clients: d.clients,
    deleteProtection: d.deleteProtection,
  };
}

// memoryMembersOf is the memory member when the form changed a switch of
// it (from the agent's, or from the defaults when creating), keeping its
// other members; else nothing, so an untouched form changes nothing.
function memoryMembersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  const before = agent ? draftOf(agent).memory : memoryDefaults;
  const keys = Object.keys(memoryDefaults) as (keyof MemoryDraft)[];
  if (keys.every((k) => d.memory[k] === before[k])) return {};
  return { memory: { ...agent?.memory, ...d.memory } };
}

// toolMembersOf are the members of the form's tools section. Each is sent
// only when the agent has it or the form gives it a value, so saving a form
// whose tools were not touched changes nothing.
function toolMembersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  const out: Schemas["AgentUpdateRequest"] = {};
  if (d.actions.length || agent?.actions) {
    out.actions = d.actions.map((a) => {
      const parameters = parametersOf(a.parameters);
      return {
        name: a.name,
        description: a.description,
        examples: a.examples,
        ...(a.handler.trim() ? { handler: a.handler.trim() } : {}),
        ...(parameters && !(parameters instanceof Error) ? { parameters } : {}),
      };
    });
  }
  const { maxToolSteps: _, ...modelSettings } = agent?.modelSettings ?? {};
  if (d.maxToolSteps.trim()) out.modelSettings = { ...modelSettings, maxToolSteps: Number(d.maxToolSteps) };
  else if (agent?.modelSettings) out.modelSettings = modelSettings;
  if (d.servers.length || agent?.settings.mcp?.servers) {
    const servers = Object.fromEntries(
      d.servers.map((sv): [string, Schemas["McpServer"]] => [
        sv.name.trim(),
        {
          ...sv.rest,
          type: sv.type,
          ...(sv.url.trim() ? { url: sv.url.trim() } : {}),
          ...(sv.headers.length
            ? { headers: Object.fromEntries(sv.headers.map((h) => [h.name.trim(), h.value])) }
            : {}),
        },
      ]),
    );
    out.settings = { ...agent?.settings, mcp: { ...agent?.settings.mcp, servers } } as Schemas["Settings"];
  }
  const plugins = agent?.plugins ?? [];
  if (d.mcp !== usesMCP(plugins)) {
    out.plugins = d.mcp
      ? plugins.some((p) => p.name === mcpPlugins[0])
        ? plugins.map((p) => (p.name === mcpPlugins[0] ? { ...p, enabled: true } : p))
        : [...plugins, { name: mcpPlugins[0]!, enabled: true }]
      : plugins.map((p) => (mcpPlugins.includes(p.name) ? { ...p, enabled: false } : p));
  }
  return out;
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
                <option key={p} value={p}>
                  {p}
                </option>
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
      <MemoryFields draft={d} onChange={onChange} error={error} />
      <ToolsFields draft={d} onChange={onChange} error={error} />
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
          onSubmit={() => void save({ ...membersOf(draft, agent), status: draft.status }, setError)}
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
      <AgentTools agent={agent} />
      <ExportAgent agent={agent} />
      <DeleteAgent agent={agent} />
    </div>
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
function MemoryFields({ draft: d, onChange, error }: { draft: Draft; onChange: (d: Draft) => void; error: unknown }) {
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

// ToolsFields is the form's tools section: the actions with their handler
// and parameters, maxToolSteps and the MCP servers.
function ToolsFields({ draft: d, onChange, error }: { draft: Draft; onChange: (d: Draft) => void; error: unknown }) {
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  const setAction = (i: number, patch: Partial<ActionDraft>) =>
    set({ actions: d.actions.map((a, j) => (j === i ? { ...a, ...patch } : a)) });
  const setServer = (i: number, patch: Partial<ServerDraft>) =>
    set({ servers: d.servers.map((sv, j) => (j === i ? { ...sv, ...patch } : sv)) });
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
              <Field id={`action-${i}-name`} label="Name" error={error}>
                {(desc) => (
                  <input
                    id={`action-${i}-name`}
                    value={a.name}
                    aria-describedby={desc}
                    onInput={(e) => setAction(i, { name: e.currentTarget.value })}
                  />
                )}
              </Field>
              <Field id={`action-${i}-handler`} label="Handler URL" error={error}>
                {(desc) => (
                  <input
                    id={`action-${i}-handler`}
                    type="url"
                    placeholder="https://tools.example.com/price"
                    value={a.handler}
                    aria-describedby={desc}
                    onInput={(e) => setAction(i, { handler: e.currentTarget.value })}
                  />
                )}
              </Field>
            </div>
            <Field id={`action-${i}-description`} label="Description" error={error}>
              {(desc) => (
                <input
                  id={`action-${i}-description`}
                  value={a.description}
                  aria-describedby={desc}
                  onInput={(e) => setAction(i, { description: e.currentTarget.value })}
                />
              )}
            </Field>
            <ParametersField
              id={`action-${i}-parameters`}
              value={a.parameters}
              onChange={(parameters) => setAction(i, { parameters })}
            />
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
      <Field
        id="modelSettings"
        label="Tool steps per turn"
        hint="Model calls of one turn that may use tools, 0 to 20; 0 offers none. Empty for the default, 5."
        error={error}
      >
        {(desc, invalid) => (
          <input
            id="modelSettings"
            type="number"
            min={0}
            max={20}
            step={1}
            value={d.maxToolSteps}
            aria-describedby={desc}
            aria-invalid={invalid}
            onInput={(e) => set({ maxToolSteps: e.currentTarget.value })}
          />
        )}
      </Field>
      <Group
        id="settings"
        legend="MCP servers"
        hint={`Header values are secrets: a stored one shows as ${secretMask} and is kept unless you type a new one (renaming its server or header drops it).`}
        error={error}
      >
        <label class="inline">
          <input
            id="mcp-plugin"
            type="checkbox"
            checked={d.mcp}
            onChange={(e) => set({ mcp: e.currentTarget.checked })}
          />
          Use the MCP servers (enables {mcpPlugins[0]})
        </label>
        {d.servers.map((sv, i) => (
          <ServerFields
            key={i}
            index={i}
            server={sv}
            error={error}
            onChange={(patch) => setServer(i, patch)}
            onRemove={() => set({ servers: d.servers.filter((_, j) => j !== i) })}
          />
        ))}
        <button
          id="add-server"
          type="button"
          class="quiet"
          onClick={() => set({ servers: [...d.servers, emptyServer] })}
        >
          Add MCP server
        </button>
      </Group>
    </fieldset>
  );
}

// ParametersField is an action's JSON Schema, checked as it is typed.
function ParametersField({ id, value, onChange }: { id: string; value: string; onChange: (v: string) => void }) {
  const p = parametersOf(value);
  const bad = p instanceof Error;
  return (
    <div class={bad ? "field invalid" : "field"}>
      <label for={id}>Parameters (JSON Schema)</label>
      <textarea
        id={id}
        class="json"
        rows={4}
        spellcheck={false}
        placeholder={'{"type": "object", "properties": {"symbol": {"type": "string"}}}'}
        value={value}
        aria-invalid={bad}
        aria-describedby={`${id}-hint${bad ? ` ${id}-error` : ""}`}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
      <small id={`${id}-hint`} class="hint">
        A JSON object; empty for one string argument, input.
      </small>
      {bad && (
        <p id={`${id}-error`} class="field-error">
          {p.message}
        </p>
      )}
    </div>
  );
}

// ServerFields is one MCP server of the form, with its headers.
function ServerFields(props: {
  index: number;
  server: ServerDraft;
  error: unknown;
  onChange: (patch: Partial<ServerDraft>) => void;
  onRemove: () => void;
}) {
  const { index: i, server: sv, error, onChange } = props;
  const setHeader = (j: number, patch: Partial<ServerDraft["headers"][number]>) =>
    onChange({ headers: sv.headers.map((h, k) => (k === j ? { ...h, ...patch } : h)) });
  return (
    <div class="row-group">
      <div class="pair">
        <Field id={`server-${i}-name`} label="Name" hint="Letters, digits and -, up to 24." error={error}>
          {(desc) => (
            <input
              id={`server-${i}-name`}
              value={sv.name}
              aria-describedby={desc}
              onInput={(e) => onChange({ name: e.currentTarget.value })}
            />
          )}
        </Field>
        <Field id={`server-${i}-type`} label="Transport" error={error}>
          {(desc) => (
            <select
              id={`server-${i}-type`}
              value={sv.type}
              aria-describedby={desc}
              onChange={(e) => onChange({ type: e.currentTarget.value as ServerDraft["type"] })}
            >
              {transports.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Field
        id={`server-${i}-url`}
        label="URL"
        hint={sv.type === "stdio" ? "stdio servers take command and args: edit them in the JSON." : undefined}
        error={error}
      >
        {(desc) => (
          <input
            id={`server-${i}-url`}
            type="url"
            placeholder="https://mcp.example.com/mcp"
            value={sv.url}
            aria-describedby={desc}
            onInput={(e) => onChange({ url: e.currentTarget.value })}
          />
        )}
      </Field>
      {sv.headers.map((h, j) => (
        <div class="pair header-row" key={j}>
          <Field id={`server-${i}-header-${j}-name`} label="Header" error={error}>
            {(desc) => (
              <input
                id={`server-${i}-header-${j}-name`}
                value={h.name}
                placeholder="Authorization"
                aria-describedby={desc}
                onInput={(e) => setHeader(j, { name: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field id={`server-${i}-header-${j}-value`} label="Value" error={error}>
            {(desc) => (
              <input
                id={`server-${i}-header-${j}-value`}
                value={h.value}
                autoComplete="off"
                spellcheck={false}
                aria-describedby={desc}
                // A stored value shows as the mask: focusing selects it, so
                // typing replaces it whole.
                onFocus={(e) => h.value === secretMask && e.currentTarget.select()}
                onInput={(e) => setHeader(j, { value: e.currentTarget.value })}
              />
            )}
          </Field>
          <button
            type="button"
            class="quiet small"
            onClick={() => onChange({ headers: sv.headers.filter((_, k) => k !== j) })}
          >
            Remove header {h.name}
          </button>
        </div>
      ))}
      <button
        id={`server-${i}-add-header`}
        type="button"
        class="quiet small"
        onClick={() => onChange({ headers: [...sv.headers, { name: "", value: "" }] })}
      >
        Add header
      </button>
      <button type="button" class="quiet small" onClick={props.onRemove}>
        Remove server {sv.name}
      </button>
    </div>
  );
}

// AgentTools lists the tools the agent's next turn would offer, and the
// MCP servers that could not be asked for theirs. Each load asks the
// servers again; saving the agent reloads it.
function AgentTools({ agent }: { agent: Agent }) {
  const tools = useQuery(
    (signal) =>
      call(api.GET("/agents/{agentId}/tools", { params: { path: { agentId: agent.id } }, signal })).then((r) => r.data),
    [agent.id, agent.updatedAt],
  );
  const errors = tools.data?.errors ?? [];
  return (
    <section class="tools" aria-labelledby="tools-title" aria-busy={tools.loading}>
      <div class="title-row">
        <h2 id="tools-title">Tools</h2>
        <button id="tools-reload" type="button" class="quiet" disabled={tools.loading} onClick={tools.reload}>
          Ask again
        </button>
      </div>
      <p class="hint">
        What the next turn offers the model: actions with a handler URL, the tools of the MCP servers and the built-in
        tools.
      </p>
      {errors.length > 0 && (
        <div class="warning">
          <p>
            <strong>MCP servers that could not be asked</strong> (their tools are left out):
          </p>
          <ul>
            {errors.map((e) => (
              <li key={e.server}>
                <code>{e.server}</code>: {e.reason}
              </li>
            ))}
          </ul>
        </div>
      )}
      <ListTable
        items={tools.data?.items}
        error={tools.error}
        empty="No tools: give an action a handler URL, or add an MCP server and enable its plugin."
        columns={["Name", "Source", "Description", "Offered", "Parameters"]}
        rowKey={(t) => t.name}
        row={(t) => <ToolRow tool={t} />}
      />
    </section>
  );
}

// ToolRow is a tool's row, and the row of its parameters when shown.
function ToolRow({ tool: t }: { tool: Schemas["AgentTool"] }) {
  const [open, setOpen] = useState(false);
  const schemaId = `tool-${t.name}-parameters`;
  return (
    <>
      <tr>
        <td>
          <code>{t.name}</code>
        </td>
        <td>
          {t.source}
          {t.server && <> ({t.server})</>}
        </td>
        <td class="wrap">{t.description}</td>
        <td>
          <span class={`status ${t.offered ? "active" : ""}`}>{t.offered ? "offered" : "not offered"}</span>
        </td>
        <td>
          <button
            type="button"
            class="link"
            aria-expanded={open}
            aria-controls={schemaId}
            onClick={() => setOpen(!open)}
          >
            {open ? "Hide" : "Show"}
            <span class="visually-hidden"> the parameters of {t.name}</span>
          </button>
        </td>
      </tr>
      <tr id={schemaId} class="tool-parameters" hidden={!open}>
        <td colSpan={5}>
          <pre class="json">{JSON.stringify(t.parameters, null, 2)}</pre>
        </td>
      </tr>
    </>
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
