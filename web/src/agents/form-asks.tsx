// form-asks.tsx: the agent form's agents it may ask with its built-in tool
// ask_agent: other agents of the account, and remote A2A agents with their
// headers.
import { useState } from "preact/hooks";
import { useAgentNames } from "../hooks";
import { Choices, Group, TextField } from "../ui";
import { type Draft, type RemoteDraft, type SectionProps, emptyRemote, secretMask } from "./draft";
import { HeaderRows } from "./form-mcp";

// AsksFields is settings.agents: allow and remote. self, when editing, is
// the agent's own id, which it cannot usefully ask. The account's agents
// are read only once the list is wanted (the agent allows some already,
// or the user asks to choose): every read counts on the account's limit,
// and most agents ask none.
export function AsksFields({ draft: d, onChange, error, self }: SectionProps & { self?: string }) {
  const [choosing, setChoosing] = useState(false);
  const set = (patch: Partial<Draft>) => onChange({ ...d, ...patch });
  const setRemote = (i: number, patch: Partial<RemoteDraft>) =>
    set({ remotes: d.remotes.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  return (
    <Group
      id="settings-agents"
      legend="Agents it may ask"
      hint={`It asks them with its tool ask_agent; what they cost is added to its runs. Remote header values are secrets: a stored one shows as ${secretMask} and is kept unless you type a new one.`}
      error={error}
    >
      {choosing || d.allow.length > 0 ? (
        <AllowChoices allow={d.allow} self={self} error={error} onChange={(allow) => set({ allow })} />
      ) : (
        <button id="choose-agents" type="button" class="quiet" onClick={() => setChoosing(true)}>
          Choose agents of this account
        </button>
      )}
      {d.remotes.map((r, i) => (
        <div class="row-group" key={i}>
          <TextField
            id={`remote-${i}-name`}
            label="Remote name"
            hint="Letters, digits and -, up to 24: the name the agent asks it by."
            error={error}
            value={r.name}
            onValue={(name) => setRemote(i, { name })}
          />
          <TextField
            id={`remote-${i}-url`}
            label="Agent card URL"
            error={error}
            type="url"
            placeholder="https://agents.example.com/.well-known/agent-card.json"
            value={r.url}
            onValue={(url) => setRemote(i, { url })}
          />
          <HeaderRows
            id={`remote-${i}`}
            headers={r.headers}
            error={error}
            onChange={(headers) => setRemote(i, { headers })}
          />
          <button
            type="button"
            class="quiet small"
            onClick={() => set({ remotes: d.remotes.filter((_, j) => j !== i) })}
          >
            Remove remote {r.name}
          </button>
        </div>
      ))}
      <button id="add-remote" type="button" class="quiet" onClick={() => set({ remotes: [...d.remotes, emptyRemote] })}>
        Add remote A2A agent
      </button>
    </Group>
  );
}

// AllowChoices are the account's agents to allow, read when shown. An
// allowed id the list does not hold (past its first 100) stays, named by
// its id.
function AllowChoices(props: {
  allow: string[];
  self?: string;
  error: SectionProps["error"];
  onChange: (allow: string[]) => void;
}) {
  const names = useAgentNames();
  const ids = [...new Set([...(names?.keys() ?? []), ...props.allow])].filter((id) => id !== props.self);
  return (
    <Choices
      id="settings-agents-allow"
      legend="Agents of this account"
      options={ids.map((id) => ({ value: id, label: names?.get(id) ?? id }))}
      chosen={props.allow}
      onChange={props.onChange}
      error={props.error}
    />
  );
}
