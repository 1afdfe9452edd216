// draft.test.ts: the agent form's actions keep whether their calls wait
// for a person: a form saved untouched must not drop the approval an
// action asked for, and the switch turns it on and off; the agents it may
// ask go back untouched, their masked headers kept. Its budget is
// settings.budget: settings is replaced whole, so every other member of
// settings must go back as it came.
import { describe, expect, it } from "vitest";
import type { Agent } from "../api";
import { budgetProblem, draftOf, emptyDraft, membersOf, problemOf } from "./draft";

const agent = {
  id: "agent_1",
  name: "Ticker",
  bio: [],
  lore: [],
  knowledge: [],
  goals: [],
  topics: [],
  adjectives: [],
  clients: [],
  plugins: [],
  personality: {},
  settings: {},
  modelProvider: "openai",
  model: "gpt-4o-mini",
  deleteProtection: false,
  status: "active",
  actions: [
    {
      name: "get_price",
      description: "Look up a price",
      examples: [],
      handler: "https://t.example/p",
      requiresApproval: true,
    },
    { name: "get_time", description: "Tell the time", examples: [], handler: "https://t.example/t" },
  ],
} as unknown as Agent;

describe("an action's approval", () => {
  it("is kept by a form saved untouched, and left out where it was not asked", () => {
    const actions = membersOf(draftOf(agent), agent).actions!;
    expect(actions[0]!.requiresApproval).toBe(true);
    expect("requiresApproval" in actions[1]!).toBe(false);
  });

  it("follows the form's switch", () => {
    const d = draftOf(agent);
    d.actions = d.actions.map((a) => ({ ...a, requiresApproval: !a.requiresApproval }));
    const actions = membersOf(d, agent).actions!;
    expect("requiresApproval" in actions[0]!).toBe(false);
    expect(actions[1]!.requiresApproval).toBe(true);
  });
});

describe("the agents it may ask", () => {
  const asking = {
    ...agent,
    settings: {
      mcp: { servers: { files: { type: "http", url: "https://m.example/mcp" } } },
      agents: {
        allow: ["agent_2"],
        remote: { billing: { url: "https://b.example/card.json", headers: { Authorization: "********" } } },
      },
    },
  } as unknown as Agent;

  it("go back as they came, the masked header kept and the MCP servers beside them", () => {
    const settings = membersOf(draftOf(asking), asking).settings!;
    expect(settings.agents).toEqual(asking.settings.agents);
    expect(settings.mcp).toEqual(asking.settings.mcp);
  });

  it("are refused when two remotes share a name", () => {
    const d = draftOf(asking);
    d.remotes = [...d.remotes, { name: "billing", url: "https://c.example/card.json", headers: [] }];
    expect(problemOf(d)?.id).toBe("remote-1-name");
  });
});

describe("the budget", () => {
  const settings = {
    telegram: { enabled: true },
    runs: { reminders: true },
    secrets: { TELEGRAM_BOT_TOKEN: "********" },
    budget: { daily: 2, perUserDaily: 0.25 },
  };
  const budgeted = { ...agent, settings } as unknown as Agent;

  it("is shown as typed, and a form saved untouched sends no settings", () => {
    const d = draftOf(budgeted);
    expect(d.budget).toEqual({ daily: "2", monthly: "", perUserDaily: "0.25" });
    expect("settings" in membersOf(d, budgeted)).toBe(false);
  });

  it("changed, goes with every other member of settings kept", () => {
    const d = draftOf(budgeted);
    d.budget = { daily: "", monthly: " 40 ", perUserDaily: "0.25" };
    expect(membersOf(d, budgeted).settings).toEqual({
      telegram: { enabled: true },
      runs: { reminders: true },
      secrets: { TELEGRAM_BOT_TOKEN: "********" },
      budget: { monthly: 40, perUserDaily: 0.25 },
    });
  });

  it("emptied, leaves settings without it", () => {
    const d = draftOf(budgeted);
    d.budget = { daily: "", monthly: "", perUserDaily: "" };
    expect(membersOf(d, budgeted).settings).toEqual({
      telegram: { enabled: true },
      runs: { reminders: true },
      secrets: { TELEGRAM_BOT_TOKEN: "********" },
    });
  });

  it("keeps the MCP servers the form changed too", () => {
    const d = draftOf(budgeted);
    d.servers = [{ name: "docs", type: "streamable-http", url: "https://mcp.example/docs", headers: [], rest: {} }];
    d.budget = { ...d.budget, daily: "3" };
    const out = membersOf(d, budgeted).settings as Record<string, unknown>;
    expect(out.mcp).toEqual({ servers: { docs: { type: "streamable-http", url: "https://mcp.example/docs" } } });
    expect(out.budget).toEqual({ daily: 3, perUserDaily: 0.25 });
    expect(out.telegram).toEqual({ enabled: true });
  });

  it("is sent by a new agent only when given", () => {
    expect("settings" in membersOf(emptyDraft)).toBe(false);
    expect(membersOf({ ...emptyDraft, budget: { daily: "1.5", monthly: "", perUserDaily: "" } }).settings).toEqual({
      budget: { daily: 1.5 },
    });
  });

  it("is refused before sending as the API would refuse it", () => {
    expect(budgetProblem("")).toBeUndefined();
    expect(budgetProblem("0.01")).toBeUndefined();
    expect(budgetProblem("1000000")).toBeUndefined();
    expect(budgetProblem("0")).toMatch(/more than \$0/);
    expect(budgetProblem("-1")).toMatch(/more than \$0/);
    expect(budgetProblem("1000000.01")).toMatch(/at most/);
    expect(budgetProblem("five")).toMatch(/number of dollars/);
    const d = { ...emptyDraft, budget: { daily: "", monthly: "abc", perUserDaily: "" } };
    expect(problemOf(d)?.id).toBe("budget-monthly");
  });
});
