// tools.tsx: the tools the agent's next turn would offer, on its page.
import { useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "../api";
import { useQuery } from "../hooks";
import { ListTable } from "../ui";

// AgentTools lists the tools the agent's next turn would offer, and the
// MCP servers that could not be asked for theirs. Each load asks the
// servers again; saving the agent reloads it.
export function AgentTools({ agent }: { agent: Agent }) {
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
