// overview.tsx: the account at a glance: agents by status, runs that need
// attention or failed, spend against the budgets, connections in error and
// the latest conversations. Each part is a card of `cards`; a later page
// adds its card there and its entry to the sidebar in main.tsx.
import type { FunctionComponent } from "preact";
import { api, call, getAgent, type Schemas } from "./api";
import { titleOf, who } from "./conversations";
import { useQuery } from "./hooks";
import { RunsCard } from "./run-pages";
import { SpendCard } from "./spend";
import { ProviderNotice } from "./status";
import { EmptyState, ErrorBox, when } from "./ui";

// sampleSize is how many of the newest agents the cards that must ask each
// agent look at: each asks one request per agent, and the API allows 60 a
// minute per operation.
const sampleSize = 8;

type AgentSummary = Schemas["AgentSummary"];

// CardProps: the newest agents (up to sampleSize), once loaded; a card
// that needs none ignores them.
type CardProps = { sample: AgentSummary[] };

export function Overview() {
  const sample = useQuery(
    (signal) =>
      call(
        api.GET("/agents", { params: { query: { limit: sampleSize, sortBy: "createdAt", order: "desc" } }, signal }),
      ).then((r) => r.data),
    [],
  );
  return (
    <section aria-labelledby="overview-title">
      <div class="title-row">
        <h1 id="overview-title">Overview</h1>
        <a class="button" href="#/agents/new">
          New agent
        </a>
      </div>
      <ProviderNotice />
      <ErrorBox error={sample.error} />
      {sample.data?.pagination.totalItems === 0 && (
        <EmptyState title="No agents yet.">
          <a href="#/agents/new">Create one</a> from the form or an ElizaOS character file, then talk to it in its
          playground.
        </EmptyState>
      )}
      {sample.data && sample.data.pagination.totalItems > 0 && (
        <div class="cards">
          {cards.map((Card, i) => (
            <Card key={i} sample={sample.data!.agents} />
          ))}
        </div>
      )}
    </section>
  );
}

// AgentsByStatus counts the account's agents in each status and lists
// those in error with their reason.
function AgentsByStatus() {
  const counts = useQuery(async (signal) => {
    const count = (status?: Schemas["AgentStatus"], limit = 1) =>
      call(api.GET("/agents", { params: { query: { limit, ...(status ? { status } : {}) } }, signal })).then(
        (r) => r.data,
      );
    const [all, active, failing] = await Promise.all([count(), count("active"), count("error", 5)]);
    const total = all.pagination.totalItems;
    const errors = failing.pagination.totalItems;
    return {
      total,
      byStatus: [
        ["active", active.pagination.totalItems],
        ["inactive", total - active.pagination.totalItems - errors],
        ["error", errors],
      ] as const,
      failing: failing.agents,
    };
  }, []);
  const d = counts.data;
  return (
    <section class="card" aria-labelledby="by-status-title">
      <div class="title-row">
        <h2 id="by-status-title">Agents</h2>
        <a href="#/agents">All agents{d ? ` (${d.total})` : ""}</a>
      </div>
      <ErrorBox error={counts.error} />
      {d && (
        <dl class="totals by-status">
          {d.byStatus.map(([status, n]) => (
            <div key={status}>
              <dt>
                <span class={`status ${status}`}>{status}</span>
              </dt>
              <dd>{n}</dd>
            </div>
          ))}
        </dl>
      )}
      {d && d.failing.length > 0 && (
        <ul class="plain-list failing">
          {d.failing.map((a) => (
            <FailingAgent key={a.id} agent={a} />
          ))}
        </ul>
      )}
    </section>
  );
}

// FailingAgent is an agent in error, with its reason once read (the list
// does not carry it).
function FailingAgent({ agent }: { agent: AgentSummary }) {
  const full = useQuery((signal) => getAgent(agent.id, signal), [agent.id]);
  return (
    <li>
      <a href={`#/agents/${agent.id}`}>{agent.name}</a> <span class="status error">error</span>
      {full.data?.statusReason && <div class="meta">{full.data.statusReason}</div>}
    </li>
  );
}

// ConnectionsInError lists the platform connections in error of the
// newest agents, with the platform's reason.
function ConnectionsInError({ sample }: CardProps) {
  const failing = useQuery(
    (signal) =>
      Promise.all(
        sample.map((a) =>
          call(api.GET("/agents/{agentId}/connections", { params: { path: { agentId: a.id } }, signal })).then((r) =>
            r.data.items.filter((c) => c.state === "error").map((c) => ({ agent: a, connection: c })),
          ),
        ),
      ).then((lists) => lists.flat()),
    [sample.map((a) => a.id).join()],
  );
  return (
    <section class="card" aria-labelledby="connections-error-title">
      <h2 id="connections-error-title">Connections in error</h2>
      <ErrorBox error={failing.error} />
      {failing.data?.length === 0 && (
        <p class="hint">
          None among the {sample.length} newest agents. A platform in an agent's clients (Telegram, Discord, X) shows
          here when it refuses the agent.
        </p>
      )}
      {failing.data && failing.data.length > 0 && (
        <ul class="plain-list">
          {failing.data.map(({ agent, connection: c }) => (
            <li key={`${agent.id}-${c.platform}`}>
              <a href={`#/agents/${agent.id}/connections`}>
                {agent.name} on {c.platform}
              </a>
              <div class="meta">{c.reason}</div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

// recentCount is how many conversations the card shows.
const recentCount = 8;

// RecentConversations are the latest conversations of the newest agents,
// the most recently active first.
function RecentConversations({ sample }: CardProps) {
  const recent = useQuery(
    (signal) =>
      Promise.all(
        sample.map((a) =>
          call(
            api.GET("/agents/{agentId}/conversations", {
              params: { path: { agentId: a.id }, query: { limit: recentCount } },
              signal,
            }),
          ).then((r) => r.data.items.map((c) => ({ agent: a, conversation: c }))),
        ),
      ).then((lists) =>
        lists
          .flat()
          .sort((x, y) => y.conversation.lastMessageAt.localeCompare(x.conversation.lastMessageAt))
          .slice(0, recentCount),
      ),
    [sample.map((a) => a.id).join()],
  );
  return (
    <section class="card" aria-labelledby="recent-title">
      <h2 id="recent-title">Recent conversations</h2>
      <ErrorBox error={recent.error} />
      {recent.data?.length === 0 && <p class="hint">None yet: open an agent's playground and say something.</p>}
      {recent.data && recent.data.length > 0 && (
        <ul class="plain-list recent">
          {recent.data.map(({ agent, conversation: c }) => (
            <li key={c.id}>
              <a href={`#/agents/${agent.id}/conversations/${c.id}`}>{titleOf(c)}</a>
              <div class="meta">
                {agent.name} · {who(c)} · {c.platform} · {when(c.lastMessageAt)}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

// Runs is the runs card, its failed runs named by the newest agents' names.
function Runs({ sample }: CardProps) {
  return <RunsCard names={new Map(sample.map((a) => [a.id, a.name]))} />;
}

// cards are the overview's parts, in order.
const cards: FunctionComponent<CardProps>[] = [
  AgentsByStatus,
  Runs,
  SpendCard,
  RecentConversations,
  ConnectionsInError,
];
