// main.tsx: the console's shell: sign-in, navigation and the hash routes.
//
//   #/signin                                   sign in with an API key
//   #/agents                                   the agents list
//   #/agents/new                               create (form or character file)
//   #/agents/{id}                              edit, JSON view and delete
//   #/agents/{id}/chat                         chat, streamed
//   #/agents/{id}/conversations[/{convId}]     history
//   #/agents/{id}/memory                       memories: search, add, forget
//   #/agents/{id}/knowledge                    documents: upload, paste
//   #/agents/{id}/context                      what the next turn would send
//   #/agents/{id}/analytics                    charts
//   #/agents/{id}/connections
//   #/webhooks[/{id}]                          webhooks
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AgentCreate } from "./agents/create";
import { AgentEdit } from "./agents/edit";
import { AgentList } from "./agents/list";
import { Analytics } from "./analytics";
import { api, call, session } from "./api";
import { Chat } from "./chat";
import { Conversation, Conversations } from "./conversations";
import { Connections } from "./connections";
import { ContextPreview } from "./context";
import { useAction, useQuery } from "./hooks";
import { Knowledge } from "./knowledge";
import { Memories } from "./memory";
import { ErrorBox, go, useRoute } from "./ui";
import { WebhookPage, Webhooks } from "./webhooks";

function SignIn() {
  const [key, setKey] = useState("");
  const { busy, error, run } = useAction();
  const submit = () =>
    run(async () => {
      session.signIn(key.trim());
      try {
        // Any authenticated read proves the key; a read key may call it too.
        await call(api.GET("/agents", { params: { query: { limit: 1 } } }));
      } catch (err) {
        session.signOut();
        throw err;
      }
      go("/agents");
    });
  return (
    <section class="signin" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in to agentd</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          placeholder="agk_…"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-hint"
        />
        <small id="api-key-hint" class="hint">
          <code>make run</code> prints one on first start; <code>agentd keys create --account default</code> makes more
          (from a source checkout: <code>go run ./cmd/agentd keys create --account default</code>). It is kept in this
          tab only.
        </small>
        <ErrorBox error={error} />
        <button type="submit" disabled={busy || !key.trim()}>
          Sign in
        </button>
      </form>
    </section>
  );
}

// AgentPage loads one agent and shows the tab its route names.
function AgentPage({ id, tab, rest }: { id: string; tab: string; rest: string[] }) {
  // Reloaded on each tab too, so the metrics above count the chat's turns.
  const {
    data: agent,
    error,
    reload,
  } = useQuery(
    (signal) => call(api.GET("/agents/{agentId}", { params: { path: { agentId: id } }, signal })).then((r) => r.data),
    [id, tab],
  );

  const tabs: [string, string][] = [
    ["", "Settings"],
    ["chat", "Chat"],
    ["conversations", "Conversations"],
    ["memory", "Memory"],
    ["knowledge", "Knowledge"],
    ["context", "Context"],
    ["analytics", "Analytics"],
    ["connections", "Connections"],
  ];
  if (error) return <ErrorBox error={error} />;
  if (!agent) return <p aria-busy="true">Loading…</p>;
  return (
    <section aria-labelledby="agent-title">
      <p>
        <a href="#/agents">← Agents</a>
      </p>
      <div class="title-row">
        <h1 id="agent-title">{agent.name}</h1>
        <span class={`status ${agent.status}`}>{agent.status}</span>
      </div>
      <p class="meta">
        {agent.id} · {agent.modelProvider}/{agent.model} ·{" "}
        <span title="Each user message answered counts once; Analytics counts the messages of both sides">
          {agent.metrics.totalMessages} exchanges answered
        </span>{" "}
        in {agent.metrics.totalConversations} conversations · uptime {agent.metrics.uptime}
      </p>
      <nav class="tabs" aria-label="Agent">
        {tabs.map(([route, title]) => (
          <a
            key={route}
            href={`#/agents/${id}${route ? `/${route}` : ""}`}
            aria-current={route === tab ? "page" : undefined}
          >
            {title}
          </a>
        ))}
      </nav>
      {tab === "" && <AgentEdit agent={agent} onSaved={reload} />}
      {tab === "chat" && <Chat agent={agent} />}
      {tab === "conversations" && !rest[0] && <Conversations agent={agent} />}
      {tab === "conversations" && rest[0] && <Conversation agent={agent} conversationId={rest[0]} />}
      {tab === "memory" && <Memories agent={agent} />}
      {tab === "knowledge" && <Knowledge agent={agent} />}
      {tab === "context" && <ContextPreview agent={agent} />}
      {tab === "analytics" && <Analytics agent={agent} />}
      {tab === "connections" && <Connections agent={agent} />}
    </section>
  );
}

function App() {
  const route = useRoute();
  const signedIn = session.key() !== null;
  useEffect(() => {
    if (!signedIn && route !== "/signin") go("/signin");
  }, [signedIn, route]);

  const parts = route.split("/").filter(Boolean);
  let page;
  if (!signedIn || parts[0] === "signin") page = <SignIn />;
  else if (parts[0] === "agents" && parts[1] === "new") page = <AgentCreate />;
  else if (parts[0] === "agents" && parts[1])
    page = <AgentPage id={parts[1]} tab={parts[2] ?? ""} rest={parts.slice(3)} />;
  else if (parts[0] === "webhooks") page = parts[1] ? <WebhookPage id={parts[1]} /> : <Webhooks />;
  else page = <AgentList />;

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById("main")?.focus())}>
        Skip to content
      </a>
      <header>
        <a class="brand" href="#/agents">
          agentd
        </a>
        {signedIn && (
          <nav aria-label="Main">
            <a href="#/agents">Agents</a>
            <a href="#/webhooks">Webhooks</a>
            <a href="/docs">API reference</a>
            <button
              type="button"
              class="link"
              onClick={() => {
                session.signOut();
                go("/signin");
              }}
            >
              Sign out
            </button>
          </nav>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
