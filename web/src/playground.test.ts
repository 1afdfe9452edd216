// playground.test.ts: what the playground sends when its settings change:
// only the members that differ, modelSettings whole (each member replaces
// the stored one) with the parameters it does not show kept.
import { describe, expect, it } from "vitest";
import type { Agent } from "./api";
import { changesOf, settingsOf } from "./playground";

const agent = {
  modelProvider: "openai",
  model: "gpt-4o-mini",
  system: "You are Ada.",
  bio: ["Helps with code."],
  modelSettings: { temperature: 0.7, frequencyPenalty: 0.5 },
} as unknown as Agent;

describe("changesOf", () => {
  it("sends nothing for settings left as they are", () => {
    expect(changesOf(settingsOf(agent), agent)).toEqual({});
  });

  it("sends the members that changed, keeping the parameters it does not show", () => {
    const s = { ...settingsOf(agent), temperature: "0.3", maxTokens: "256", bio: "One.\n\nTwo.", model: " gpt-4o " };
    expect(changesOf(s, agent)).toEqual({
      model: "gpt-4o",
      bio: ["One.", "Two."],
      modelSettings: { temperature: 0.3, maxTokens: 256, frequencyPenalty: 0.5 },
    });
  });

  it("leaves an emptied parameter to the provider's default", () => {
    expect(changesOf({ ...settingsOf(agent), temperature: "" }, agent)).toEqual({
      modelSettings: { frequencyPenalty: 0.5 },
    });
  });

  it("refuses a parameter that is not a number", () => {
    expect(() => changesOf({ ...settingsOf(agent), topP: "high" }, agent)).toThrow("Top P must be a number.");
  });
});
