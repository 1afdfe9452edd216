// main.tsx: the console's shell: sign-in, the sidebar, the theme toggle
// and the hash routes.
//
//   #/signin                                   sign in with an API key
//   #/overview                                 the account at a glance
//   #/agents                                   the agents list
//   #/agents/new                               create (form or character file)
//   #/agents/{id}                              edit, JSON view and delete
//   #/agents/{id}/chat                         the playground: settings beside a chat
//   #/agents/{id}/conversations[/{convId}]     history
//   #/agents/{id}/runs[/{runId}]               its runs, a run's page
//   #/agents/{id}/schedules                    its schedules: list, create, edit
//   #/agents/{id}/memory                       memories: search, add, forget
//   #/agents/{id}/knowledge                    documents: upload, paste
//   #/agents/{id}/context                      what the next turn would send
//   #/agents/{id}/analytics                    charts
//   #/agents/{id}/connections
//   #/runs[?status=…]                          the account's runs
//   #/approvals                                runs of every agent waiting for a decision
//   #/webhooks[/{id}]                          webhooks
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AgentCreate } from "./agents/create";
import { AgentEdit } from "./agents/edit";
import { AgentList } from "./agents/list";
import { Analytics } from "./analytics";
import { api, call, getAgent, session } from "./api";
import { ApprovalsPage, useWaitingCount } from "./approvals";
import { Playground } from "./playground";
import { useServerStatus } from "./status";
import { Conversation, Conversations } from "./conversations";
import { Connections } from "./connections";
import { ContextPreview } from "./context";
import { useAction, useQuery } from "./hooks";
import { Knowledge } from "./knowledge";
import { Memories } from "./memory";
import { Overview } from "./overview";
import { AgentRuns, RunPage, RunsPage } from "./run-pages";
import { AgentSchedules } from "./schedule-pages";
import { applyTheme, useTheme } from "./theme";
import { ErrorBox, go, useRoute } from "./ui";
import { WebhookPage, Webhooks } from "./webhooks";

// Set before the first render, so a dark page does not flash light.
applyTheme();

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
      go("/overview");
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

// agentTabs are an agent's pages: [route under #/agents/{id}, title].
const agentTabs: [string, string][] = [
  ["chat", "Playground"],
  ["conversations", "Conversations"],
  ["runs", "Runs"],
  ["schedules", "Schedules"],
  ["", "Settings"],
  ["memory", "Memory"],
  ["knowledge", "Knowledge"],
  ["context", "Context"],
  ["analytics", "Analytics"],
  ["connections", "Connections"],
];

// AgentPage loads one agent and shows the tab its route names.
function AgentPage({ id, tab, rest }: { id: string; tab: string; rest: string[] }) {
  // Read again on each tab and after each chat turn, so the metrics in the
  // header count the turns (getAgent reads past the browser's cache).
  const { data: agent, error, reload } = useQuery((signal) => getAgent(id, signal), [id, tab]);
  if (error) return <ErrorBox error={error} />;
  if (!agent) return <p aria-busy="true">Loading…</p>;
  return (
    <section aria-labelledby="agent-title">
      <div class="agent-head">
        <p class="breadcrumb">
          <a href="#/agents">← Agents</a>
        </p>
        <div class="title-row">
          <h1 id="agent-title">{agent.name}</h1>
          <span class={`status ${agent.status}`}>{agent.status}</span>
        </div>
        <p class="meta">
          <code>{agent.id}</code> · {agent.modelProvider}/{agent.model} ·{" "}
          <span title="Each user message answered counts once; Analytics counts the messages of both sides">
            {agent.metrics.totalMessages} exchanges answered
          </span>{" "}
          in {agent.metrics.totalConversations} conversations · uptime {agent.metrics.uptime}
        </p>
      </div>
      <nav class="tabs" aria-label="Agent">
        {agentTabs.map(([route, title]) => (
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
      {tab === "chat" && <Playground agent={agent} onChanged={reload} />}
      {tab === "conversations" && !rest[0] && <Conversations agent={agent} />}
      {tab === "conversations" && rest[0] && <Conversation agent={agent} conversationId={rest[0]} />}
      {tab === "runs" && !rest[0] && <AgentRuns agent={agent} />}
      {tab === "runs" && rest[0] && <RunPage key={rest[0]} agent={agent} runId={rest[0]} />}
      {tab === "schedules" && <AgentSchedules agent={agent} />}
      {tab === "memory" && <Memories agent={agent} />}
      {tab === "knowledge" && <Knowledge agent={agent} />}
      {tab === "context" && <ContextPreview agent={agent} />}
      {tab === "analytics" && <Analytics agent={agent} />}
      {tab === "connections" && <Connections agent={agent} />}
    </section>
  );
}

// sections are the console's pages in the sidebar, in order; a new page
// (schedules, spend) adds its entry here and its route in App. counted
// marks the entry that shows how many runs wait for a decision.
const sections: { route: string; label: string; counted?: boolean }[] = [
  { route: "/overview", label: "Overview" },
  { route: "/agents", label: "Agents" },
  { route: "/runs", label: "Runs" },
  { route: "/approvals", label: "Approvals", counted: true },
  { route: "/webhooks", label: "Webhooks" },
];

// CountBadge is a count beside a sidebar entry, said in words to a screen
// reader ("2 waiting"); nothing when there is none.
function CountBadge({ n, what }: { n?: number; what: string }) {
  if (!n) return null;
  return (
    <span class="badge">
      {n}
      <span class="visually-hidden"> {what}</span>
    </span>
  );
}

// Brand is the console's mark (the favicon's drawing) and name.
function Brand() {
  return (
    <a class="brand" href="#/overview">
      <svg viewBox="0 0 32 32" aria-hidden="true">
        <rect width="32" height="32" rx="7" fill="#2f5bd3" />
        <path d="M10 22 16 10 22 22Z" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round" />
        <circle cx="16" cy="10" r="3.2" fill="#fff" />
        <circle cx="10" cy="22" r="3.2" fill="#fff" />
        <circle cx="22" cy="22" r="3.2" fill="#fff" />
      </svg>
      agentd
    </a>
  );
}

// ServerVersion names the server's version, from GET /status.
function ServerVersion() {
  const status = useServerStatus();
  return status ? <span class="version">agentd {status.version}</span> : null;
}

// ThemeToggle switches between light and dark; the choice is kept.
function ThemeToggle() {
  const [theme, toggle] = useTheme();
  return (
    <button type="button" class="link theme-toggle" aria-pressed={theme === "dark"} onClick={toggle}>
      {theme === "dark" ? "Light theme" : "Dark theme"}
    </button>
  );
}

function App() {
  const route = useRoute();
  const signedIn = session.key() !== null;
  const waiting = useWaitingCount(signedIn);
  useEffect(() => {
    if (!signedIn && route !== "/signin") go("/signin");
  }, [signedIn, route]);

  // A route may end in a query (#/runs?status=failed).
  const [path = "", query = ""] = route.split("?");
  const parts = path.split("/").filter(Boolean);
  let page;
  if (!signedIn || parts[0] === "signin") page = <SignIn />;
  else if (parts[0] === "agents" && parts[1] === "new") page = <AgentCreate />;
  else if (parts[0] === "agents" && parts[1])
    page = <AgentPage id={parts[1]} tab={parts[2] ?? ""} rest={parts.slice(3)} />;
  else if (parts[0] === "runs") page = <RunsPage status={new URLSearchParams(query).get("status") ?? ""} />;
  else if (parts[0] === "approvals") page = <ApprovalsPage />;
  else if (parts[0] === "webhooks") page = parts[1] ? <WebhookPage id={parts[1]} /> : <Webhooks />;
  else if (parts[0] === "agents") page = <AgentList />;
  else page = <Overview />;
  const here = `/${parts[0] ?? ""}`;

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById("main")?.focus())}>
        Skip to content
      </a>
      <div class={signedIn ? "shell" : "shell signin-shell"}>
        <header>
          <Brand />
          {signedIn && (
            <nav aria-label="Main">
              {sections.map((sec) => (
                <a key={sec.route} href={`#${sec.route}`} aria-current={sec.route === here ? "page" : undefined}>
                  {sec.label}
                  {sec.counted && <CountBadge n={waiting} what="waiting" />}
                </a>
              ))}
              <a href="/docs">API reference</a>
            </nav>
          )}
          <div class="nav-foot">
            {signedIn && <ServerVersion />}
            <ThemeToggle />
            {signedIn && (
              <button
                type="button"
                class="link sign-out"
                onClick={() => {
                  session.signOut();
                  go("/signin");
                }}
              >
                Sign out
              </button>
            )}
          </div>
        </header>
        <main id="main" tabIndex={-1}>
          {page}
        </main>
      </div>
    </>
  );
}

render(<App />, document.getElementById("app")!);
