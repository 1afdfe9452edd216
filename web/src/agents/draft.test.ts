// draft.test.ts: the agent form's actions keep whether their calls wait
// for a person: a form saved untouched must not drop the approval an
// action asked for, and the switch turns it on and off.
import { describe, expect, it } from "vitest";
import type { Agent } from "../api";
import { draftOf, membersOf } from "./draft";

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
