// money.test.ts: money and tokens as every page shows them, how far a
// budget is spent, and a refusal by a budget in words.
import { describe, expect, it } from "vitest";
import { budgetRefusal, resetsIn, spendOf, tokenCount, usage, usd } from "./money";

describe("an amount of dollars", () => {
  it("shows cents from a cent up, grouped", () => {
    expect(usd(0)).toBe("$0.00");
    expect(usd(0.01)).toBe("$0.01");
    expect(usd(1.5)).toBe("$1.50");
    expect(usd(12.345)).toBe("$12.35");
    expect(usd(1_000_000)).toBe("$1,000,000.00");
  });

  it("shows at least 4 and at most 6 decimals below a cent", () => {
    expect(usd(0.006)).toBe("$0.0060");
    expect(usd(0.0042)).toBe("$0.0042");
    expect(usd(0.000125)).toBe("$0.000125");
    expect(usd(0.00009)).toBe("$0.00009");
    expect(usd(0.000001)).toBe("$0.000001");
    expect(usd(0.0099999)).toBe("$0.01");
  });

  it("says when there is no amount", () => {
    expect(usd(null)).toBe("—");
    expect(usd(undefined)).toBe("—");
    expect(usd(Number.NaN)).toBe("—");
  });
});

describe("a reply's usage", () => {
  it("reads cost, tokens and their split", () => {
    expect(usage({ costUsd: 0.006, inputTokens: 1200, outputTokens: 300, tokensUsed: 1500 })).toBe(
      "$0.0060 · 1,500 tokens (1,200 in, 300 out)",
    );
    expect(usage({ costUsd: 0, inputTokens: 30, outputTokens: 12 })).toBe("$0.00 · 42 tokens (30 in, 12 out)");
  });

  it("leaves the split out when the provider gave none", () => {
    expect(usage({ costUsd: 0, inputTokens: 0, outputTokens: 0, tokensUsed: 7 })).toBe("$0.00 · 7 tokens");
    expect(tokenCount(1)).toBe("1 token");
  });
});

describe("how far a budget is spent", () => {
  it("has no level without a budget", () => {
    expect(spendOf(3, null)).toEqual({ percent: null, level: "none" });
  });

  it("warns from 80% and is over from 100%", () => {
    expect(spendOf(0, 10)).toEqual({ percent: 0, level: "ok" });
    expect(spendOf(7.99, 10)).toEqual({ percent: 79, level: "ok" });
    expect(spendOf(8, 10)).toEqual({ percent: 80, level: "warn" });
    expect(spendOf(9.999, 10)).toEqual({ percent: 99, level: "warn" });
    expect(spendOf(10, 10)).toEqual({ percent: 100, level: "over" });
    expect(spendOf(12.5, 10)).toEqual({ percent: 125, level: "over" });
  });
});

describe("a refusal by a budget", () => {
  const now = Date.parse("2026-11-28T18:48:00Z");

  it("names the budget, what was spent and when it resets", () => {
    expect(
      budgetRefusal(
        { scope: "agent", period: "day", limitUsd: 1, spentUsd: 1.0042, resetsAt: "2026-11-29T00:00:00Z" },
        now,
      ),
    ).toEqual({
      text: "The agent's daily budget of $1.00 is spent: $1.00 today. It resets at 00:00 UTC (in 5 h 12 min).",
      advice: "Raise it in the agent's Settings, under Budget, or wait for the reset.",
    });
    expect(budgetRefusal({ scope: "user", period: "day", limitUsd: 0.5 }, now)?.text).toBe(
      "This user's daily budget on the agent of $0.50 is spent.",
    );
  });

  it("sends the account's to the operator", () => {
    expect(
      budgetRefusal(
        { scope: "account", period: "month", limitUsd: 50, spentUsd: 50.2, resetsAt: "2026-12-01T00:00:00Z" },
        now,
      ),
    ).toEqual({
      text: "The account's monthly budget of $50.00 is spent: $50.20 this month. It resets on 1 Dec, 00:00 UTC (in 2 d 5 h).",
      advice: "Only the operator can raise the account's budget (agentd accounts update --monthly-budget).",
    });
  });

  it("is nothing without a budget named", () => {
    expect(budgetRefusal({}, now)).toBeUndefined();
  });

  it("says a reset within a day by its time", () => {
    expect(resetsIn("2026-11-29T00:00:00Z", now)).toBe("at 00:00 UTC (in 5 h 12 min)");
  });
});
