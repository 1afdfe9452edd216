// status.test.ts: the notice that says what to set before a first message
// can be answered, from GET /status.
import { describe, expect, it } from "vitest";
import type { Agent } from "./api";
import { missingProvider, type ServerStatus } from "./status";

const status = (configured: string[], defaultProvider = "openai"): ServerStatus => ({
  version: "dev",
  defaultProvider,
  providers: (["openai", "anthropic", "groq", "google", "ollama"] as const).map((name) => ({
    name,
    configured: configured.includes(name),
  })),
});

const agent = (modelProvider: string, secrets?: Record<string, string>) =>
  ({ name: "Ada", modelProvider, settings: secrets ? { secrets } : {} }) as unknown as Agent;

describe("missingProvider", () => {
  it("says to set a key when only ollama (which needs none) can be called", () => {
    expect(missingProvider(status(["ollama"]))).toMatch(/^No provider key is configured: set OPENAI_API_KEY/);
    expect(missingProvider(status(["openai", "ollama"]))).toBeUndefined();
  });

  it("names the default provider's key when another provider has one", () => {
    expect(missingProvider(status(["anthropic", "ollama"]))).toBe(
      "The default provider, openai, has no key: set OPENAI_API_KEY in the server's environment, or give each " +
        "agent a provider that has one (anthropic).",
    );
  });

  it("speaks of the agent's own provider, unless the agent brings its key", () => {
    const s = status(["openai", "ollama"]);
    expect(missingProvider(s, agent("anthropic"))).toMatch(
      /^The server has no key for anthropic, which Ada uses: set ANTHROPIC_API_KEY/,
    );
    expect(missingProvider(s, agent("anthropic", { ANTHROPIC_API_KEY: "********" }))).toBeUndefined();
    // An agent without a provider uses the default.
    expect(missingProvider(s, agent(""))).toBeUndefined();
    expect(missingProvider(status(["ollama"]), agent(""))).toMatch(/no key for openai/);
    expect(missingProvider(undefined, agent("anthropic"))).toBeUndefined();
  });
});
