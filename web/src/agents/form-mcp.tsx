// form-mcp.tsx: the agent form's MCP servers, with their headers, and the
// switch of the plugin that uses them.
import type { Schemas } from "../api";
import { Group, SelectField, TextField } from "../ui";
import {
  type Draft,
  type HeaderDraft,
  type SectionProps,
  type ServerDraft,
  emptyServer,
  mcpPlugins,
  secretMask,
} from "./draft";

const transports: Schemas["McpTransport"][] = ["streamable-http", "http", "sse", "stdio"];

// McpFields is the MCP servers of the form's tools section.
export function McpFields({ draft: d, onChange, error }: SectionProps) {
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  const setServer = (i: number, patch: Partial<ServerDraft>) =>
    set({ servers: d.servers.map((sv, j) => (j === i ? { ...sv, ...patch } : sv)) });
  return (
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
      <button id="add-server" type="button" class="quiet" onClick={() => set({ servers: [...d.servers, emptyServer] })}>
        Add MCP server
      </button>
    </Group>
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
  return (
    <div class="row-group">
      <div class="pair">
        <TextField
          id={`server-${i}-name`}
          label="Name"
          hint="Letters, digits and -, up to 24."
          error={error}
          value={sv.name}
          onValue={(name) => onChange({ name })}
        />
        <SelectField
          id={`server-${i}-type`}
          label="Transport"
          error={error}
          options={transports}
          value={sv.type}
          onValue={(type) => onChange({ type })}
        />
      </div>
      <TextField
        id={`server-${i}-url`}
        label="URL"
        hint={sv.type === "stdio" ? "stdio servers take command and args: edit them in the JSON." : undefined}
        error={error}
        type="url"
        placeholder="https://mcp.example.com/mcp"
        value={sv.url}
        onValue={(url) => onChange({ url })}
      />
      <ServerApproval index={i} server={sv} onChange={onChange} />
      <HeaderRows id={`server-${i}`} headers={sv.headers} error={error} onChange={(headers) => onChange({ headers })} />
      <button type="button" class="quiet small" onClick={props.onRemove}>
        Remove server {sv.name}
      </button>
    </div>
  );
}

// ServerApproval switches whether each call of a server's tools waits for
// a person's decision (requireApproval always, or left out: never). A list
// of tools set through the API is shown, and changed in the JSON only.
function ServerApproval(props: {
  index: number;
  server: ServerDraft;
  onChange: (patch: Partial<ServerDraft>) => void;
}) {
  const { requireApproval, ...rest } = props.server.rest;
  const listed = Array.isArray(requireApproval);
  return (
    <label class="inline">
      <input
        id={`server-${props.index}-approval`}
        type="checkbox"
        checked={requireApproval === "always" || listed}
        disabled={listed}
        onChange={(e) =>
          props.onChange({ rest: e.currentTarget.checked ? { ...rest, requireApproval: "always" } : rest })
        }
      />
      Ask a person first: each call of its tools waits in Approvals
      {listed && <> (only {requireApproval.join(", ")}: change the list in the JSON)</>}
    </label>
  );
}

// HeaderRows are the headers sent to an MCP server or a remote agent (id
// prefixes their inputs), their values secrets.
export function HeaderRows(props: {
  id: string;
  headers: HeaderDraft[];
  error: unknown;
  onChange: (headers: HeaderDraft[]) => void;
}) {
  const { id, headers, error, onChange } = props;
  const setHeader = (j: number, patch: Partial<HeaderDraft>) =>
    onChange(headers.map((h, k) => (k === j ? { ...h, ...patch } : h)));
  return (
    <>
      {headers.map((h, j) => (
        <div class="pair header-row" key={j}>
          <TextField
            id={`${id}-header-${j}-name`}
            label="Header"
            error={error}
            placeholder="Authorization"
            value={h.name}
            onValue={(name) => setHeader(j, { name })}
          />
          <TextField
            id={`${id}-header-${j}-value`}
            label="Value"
            error={error}
            autoComplete="off"
            spellcheck={false}
            // A stored value shows as the mask: focusing selects it, so
            // typing replaces it whole.
            onFocus={(e) => h.value === secretMask && e.currentTarget.select()}
            value={h.value}
            onValue={(value) => setHeader(j, { value })}
          />
          <button type="button" class="quiet small" onClick={() => onChange(headers.filter((_, k) => k !== j))}>
            Remove header {h.name}
          </button>
        </div>
      ))}
      <button
        id={`${id}-add-header`}
        type="button"
        class="quiet small"
        onClick={() => onChange([...headers, { name: "", value: "" }])}
      >
        Add header
      </button>
    </>
  );
}
