// spend.tsx: what was spent against the budgets, as bars: an agent's day
// and month on its page, and the account's month on the overview.
import type { ComponentChildren } from "preact";
import { type Agent, api, call } from "./api";
import { useQuery } from "./hooks";
import { resetsIn, spendOf, usd } from "./money";
import { ErrorBox } from "./ui";

// levelWords say a level that colour alone must not carry.
const levelWords = { none: "", ok: "", warn: " · nearly spent", over: " · reached: new runs are refused" };

// SpendBar is one budget window: what was spent of its limit, in figures
// and as a bar coloured by how far it is spent (from 80%, from 100%), and
// when it resets; "no budget" and no bar when the limit is unset.
export function SpendBar(props: { label: ComponentChildren; spent: number; limit: number | null; resetsAt?: string }) {
  const { spent, limit, resetsAt } = props;
  const { percent, level } = spendOf(spent, limit);
  // A spend too small for a percent is still not nothing.
  const share = percent === 0 && spent > 0 ? "<1" : percent;
  return (
    <div class={`spend spend-${level}`}>
      <div class="spend-head">
        <span class="spend-label">{props.label}</span>
        <span class="spend-figure">
          {usd(spent)}
          {percent === null ? " · no budget" : ` of ${usd(limit)} (${share}%)${levelWords[level]}`}
        </span>
      </div>
      {percent !== null && (
        <div class="spend-bar" aria-hidden="true">
          <span style={{ width: `${Math.min(percent, 100)}%` }} />
        </div>
      )}
      {resetsAt && <small class="hint">Resets {resetsIn(resetsAt)}</small>}
    </div>
  );
}

// AgentSpend is an agent's day and month against its budgets, and its
// per-user daily budget when it has one; it is read again whenever the
// agent is (after a save). Only the agent's page reads it: every request
// counts against the account's 60 a minute.
export function AgentSpend({ agent }: { agent: Agent }) {
  const spend = useQuery(
    (signal) =>
      call(
        api.GET("/agents/{agentId}/spend", { params: { path: { agentId: agent.id } }, signal, cache: "no-store" }),
      ).then((r) => r.data),
    [agent],
  );
  const d = spend.data;
  const perUser = d?.perUserDaily.limitUsd ?? null;
  return (
    <section class="agent-spend" aria-labelledby="spend-title">
      <h2 id="spend-title">Spend</h2>
      <ErrorBox error={spend.error} />
      {d && (
        <div class="spend-bars">
          <SpendBar label="Today" spent={d.day.spentUsd} limit={d.day.limitUsd} resetsAt={d.day.resetsAt} />
          <SpendBar label="This month" spent={d.month.spentUsd} limit={d.month.limitUsd} resetsAt={d.month.resetsAt} />
          {perUser !== null && <p class="hint">Each user may spend {usd(perUser)} a day.</p>}
        </div>
      )}
    </section>
  );
}

// SpendCard is the overview's card: the account's month against its
// budget (one request: each agent's spend is on its page).
export function SpendCard() {
  const account = useQuery(
    (signal) => call(api.GET("/account", { signal, cache: "no-store" })).then((r) => r.data),
    [],
  );
  const budget = account.data?.budget;
  return (
    <section class="card spend-card" aria-labelledby="spend-card-title">
      <h2 id="spend-card-title">Spend</h2>
      <ErrorBox error={account.error} />
      {budget && (
        <SpendBar
          label="The account this month"
          spent={budget.spent}
          limit={budget.monthly}
          resetsAt={budget.resetsAt}
        />
      )}
      {budget && (
        <p class="hint">
          {budget.monthly === null ? (
            <>
              The operator sets the account's monthly budget: <code>agentd accounts update --monthly-budget</code>.
            </>
          ) : (
            "Once it is spent, every agent's new runs are refused until it resets."
          )}{" "}
          An agent's own budgets and spend are on its page.
        </p>
      )}
    </section>
  );
}
