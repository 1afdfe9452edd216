// connections.tsx: an agent's platform connections, their states and why.
import { useEffect, useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";
import { ErrorBox, when } from "./ui";

// stateHelp says what a person can do about each state.
const stateHelp: Record<Schemas["ConnectionState"], string> = {
  connecting: "Starting, or waiting for a replica to take it.",
  connected: "Live: the agent answers on this platform.",
  disconnected: "Stopped: the agent is inactive or the platform left its clients.",
  error: "The platform refused it; fix what the reason says, then save the agent.",
  disabled: "Credentials are missing from settings.secrets.",
};

export function Connections({ agent }: { agent: Agent }) {
  const [items, setItems] = useState<Schemas["Connection"][]>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    call(api.GET("/agents/{agentId}/connections", { params: { path: { agentId: agent.id } } }))
      .then((r) => setItems(r.data.items))
      .catch(setError);
  }, [agent.id]);
  return (
    <section aria-labelledby="connections-title">
      <h2 id="connections-title">Connections</h2>
      <ErrorBox error={error} />
      {items && items.length === 0 && <p>No platforms: add discord, telegram or twitter to the agent's clients.</p>}
      {items && items.length > 0 && (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Platform</th>
                <th scope="col">State</th>
                <th scope="col">Bot</th>
                <th scope="col">In / out</th>
                <th scope="col">Since</th>
                <th scope="col">Last event</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => (
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
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
