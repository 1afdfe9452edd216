// transfer.tsx: moving an agent between servers: importing a character
// file (on the list) and exporting one (on the agent's page).
import { useState } from "preact/hooks";
import { type Agent, ApiFailure, api, call, type Schemas } from "../api";
import { useAction } from "../hooks";
import { ErrorBox } from "../ui";

// ImportAgent creates an agent from a character file chosen on the list,
// such as one Export wrote on this or another server: Create Agent takes it
// as it is, with the memories, knowledge and history under its agentd
// member.
export function ImportAgent({ onImported }: { onImported: () => void }) {
  const { busy, error, run } = useAction();
  const [file, setFile] = useState<string>();
  const [created, setCreated] = useState<Schemas["AgentCreated"]>();

  const load = async (input: HTMLInputElement) => {
    const chosen = input.files?.[0];
    if (!chosen) return;
    setCreated(undefined);
    setFile(chosen.name);
    await run(async () => {
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
    });
    // The same file chosen again is imported again.
    input.value = "";
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
  // Control characters are what the pattern is for.
  // eslint-disable-next-line no-control-regex
  return `${name.trim().replace(/[\\/:*?"<>|\u0000-\u001f]/g, "_") || "agent"}.character.json`;
}

// count says how many items a list holds, in words.
function count(items: unknown[] | undefined, one: string, many: string): string {
  const n = items?.length ?? 0;
  return `${n} ${n === 1 ? one : many}`;
}

// ExportAgent downloads the agent's character file, with its memories,
// knowledge and history, as <name>.character.json.
export function ExportAgent({ agent }: { agent: Agent }) {
  const { busy, error, run } = useAction();
  const [done, setDone] = useState<string>();

  const download = () =>
    run(async () => {
      setDone(undefined);
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
    });

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
