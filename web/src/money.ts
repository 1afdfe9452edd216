// money.ts: what things cost, in words: an amount of dollars, a count of
// tokens, a reply's usage, how far a budget is spent, and why a budget
// refused a run. Every page formats money with usd, so a cent reads the same
// on a reply, a run, a spend bar and in analytics.
import type { Schemas } from "./api";
import { relative } from "./time";

const grouped = new Intl.NumberFormat("en-US");

// usd formats an amount of dollars: cents for a cent or more ("$1,234.50"),
// else up to 6 decimals, at least 4 ("$0.0060", "$0.000125"), as the API
// rounds costs to 6; "$0.00" for nothing, "—" when there is no amount.
export function usd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined || !Number.isFinite(amount)) return "—";
  const sign = amount < 0 ? "-" : "";
  // To the API's precision first, so 0.0099999 reads a cent.
  const a = Math.round(Math.abs(amount) * 1e6) / 1e6;
  if (a === 0 || a >= 0.01) {
    return `${sign}$${a.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  }
  return `${sign}$${a.toFixed(6).replace(/(\.\d{4}\d*?)0+$/, "$1")}`;
}

// count is a count with its thousands grouped: "1,500".
export function count(n: number): string {
  return grouped.format(n);
}

// tokenCount is a count of tokens in words: "1 token", "1,500 tokens".
export function tokenCount(n: number): string {
  return `${count(n)} ${n === 1 ? "token" : "tokens"}`;
}

// usage is what a reply or a run cost and used: "$0.0060 · 1,500 tokens
// (1,200 in, 300 out)"; the split is left out when the provider reported
// none (a reply stored before it was counted).
export function usage(u: { costUsd: number | null; inputTokens: number; outputTokens: number; tokensUsed?: number }) {
  const total = u.tokensUsed ?? u.inputTokens + u.outputTokens;
  const split = u.inputTokens || u.outputTokens ? ` (${count(u.inputTokens)} in, ${count(u.outputTokens)} out)` : "";
  return `${usd(u.costUsd)} · ${tokenCount(total)}${split}`;
}

// SpendLevel is how far a budget is spent: "none" without a budget, "ok"
// below 80%, "warn" from 80% (when budget.threshold goes out), "over" from
// 100% (runs are refused).
export type SpendLevel = "none" | "ok" | "warn" | "over";

// spendOf is the share of limit spent, in percent rounded down (so 79.9%
// does not read 80% while the bar is not yet marked), and its level.
export function spendOf(spent: number, limit: number | null): { percent: number | null; level: SpendLevel } {
  if (limit === null || limit <= 0) return { percent: null, level: "none" };
  const share = spent / limit;
  return { percent: Math.floor(share * 100), level: share >= 1 ? "over" : share >= 0.8 ? "warn" : "ok" };
}

// budgetNames name a budget by its scope and period.
const budgetNames: Record<Schemas["BudgetScope"], Record<Schemas["BudgetPeriod"], string>> = {
  agent: { day: "The agent's daily budget", month: "The agent's monthly budget" },
  user: { day: "This user's daily budget on the agent", month: "This user's monthly budget on the agent" },
  account: { day: "The account's daily budget", month: "The account's monthly budget" },
};

// budgetRefusal says in words which budget refused a run (BUDGET_EXCEEDED's
// details), how much of it was spent and when it resets (text), and who can
// raise it (advice); undefined when the details do not name a budget.
export function budgetRefusal(
  d: Schemas["ErrorDetails"],
  now = Date.now(),
): { text: string; advice: string } | undefined {
  if (!d.scope || !d.period || d.limitUsd === undefined) return undefined;
  const spent = d.spentUsd === undefined ? "" : `: ${usd(d.spentUsd)} ${d.period === "day" ? "today" : "this month"}`;
  const resets = d.resetsAt ? ` It resets ${resetsIn(d.resetsAt, now)}.` : "";
  return {
    text: `${budgetNames[d.scope][d.period]} of ${usd(d.limitUsd)} is spent${spent}.${resets}`,
    advice:
      d.scope === "account"
        ? "Only the operator can raise the account's budget (agentd accounts update --monthly-budget)."
        : "Raise it in the agent's Settings, under Budget, or wait for the reset.",
  };
}

// resetsIn is when a budget's window ends, in UTC as windows are: "at
// 00:00 UTC (in 5 h 12 min)" within a day, else "on 1 Dec, 00:00 UTC (in
// 3 d 4 h)".
export function resetsIn(ts: string, now = Date.now()): string {
  const at = new Date(ts);
  const day =
    Date.parse(ts) - now <= 24 * 3600 * 1000
      ? "at"
      : `on ${at.getUTCDate()} ${at.toLocaleString("en-US", { month: "short", timeZone: "UTC" })},`;
  return `${day} ${at.toISOString().slice(11, 16)} UTC (${relative(ts, now)})`;
}
