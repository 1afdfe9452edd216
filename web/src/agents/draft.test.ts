// draft.test.ts: the agent form's actions keep whether their calls wait
// for a person: a form saved untouched must not drop the approval an
// action asked for, and the switch turns it on and off; the agents it may
// ask go back untouched, their masked headers kept.
import { describe, expect, it } from "vitest";
import type { Agent } from "../api";
import { draftOf, membersOf, problemOf } from "./draft";

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
