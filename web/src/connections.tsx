// connections.tsx: an agent's platform connections, their states and why.
import { type Agent, api, call, type Schemas } from "./api";
import { useQuery } from "./hooks";
import { ListTable, when } from "./ui";

// stateHelp says what a person can do about each state.
const stateHelp: Record<Schemas["ConnectionState"], string> = {
  connecting: "Starting, or waiting for a replica to take it.",
  connected: "Live: the agent answers on this platform.",
  disconnected: "Stopped: the agent is inactive or the platform left its clients.",
  error: "The platform refused it; fix what the reason says, then save the agent.",
  disabled: "Credentials are missing from settings.secrets.",
};

export function Connections({ agent }: { agent: Agent }) {
  const { data: items, error } = useQuery(
    (signal) =>
      call(api.GET("/agents/{agentId}/connections", { params: { path: { agentId: agent.id } }, signal })).then(
        (r) => r.data.items,
      ),
    [agent.id],
  );
  return (
    <section aria-labelledby="connections-title">
      <h2 id="connections-title">Connections</h2>
      <ListTable
        items={items}
        error={error}
        empty="No platforms: add discord, telegram or twitter to the agent's clients."
        columns={["Platform", "State", "Bot", "In / out", "Since", "Last event"]}
        rowKey={(c) => c.platform}
        row={(c) => (
          <tr>
            <td>{c.platform}</td>
            <td>
              <span class={`status ${c.state}`} title={stateHelp[c.state]}>
                {c.state}
              </span>
              {c.reason && <div class="meta">{c.reason}</div>}
            </td>
            <td>{c.account ? `@${c.account.username} (${c.account.id})` : "—"}</td>
            <td>
              {c.messagesIn} / {c.messagesOut}
            </td>
            <td>{when(c.since)}</td>
            <td>{c.lastEventAt ? when(c.lastEventAt) : "—"}</td>
          </tr>
        )}
      />
    </section>
  );
}
