// status.tsx: what the server says of itself (GET /status: its version,
// its default model provider and which providers it can call), and the
// notice that says what to do when an agent cannot reach a model.
import { useEffect, useState } from "preact/hooks";
import { type Agent, api, call, type Schemas } from "./api";

// ServerStatus is the answer of GET /status.
export type ServerStatus = Schemas["Status"];

// providerSetting is what configures each provider on the server.
export const providerSetting: Record<Schemas["ModelProviderName"], string> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  groq: "GROQ_API_KEY",
  google: "GOOGLE_API_KEY",
  ollama: "OLLAMA_HOST",
};

let asked: Promise<ServerStatus | undefined> | undefined;

// fetchStatus asks once per page load; a failure is forgotten (and asked
// again by the next page), and shows no notice rather than a wrong one.
function fetchStatus(): Promise<ServerStatus | undefined> {
  asked ??= call(api.GET("/status", {}))
    .then((r) => r.data)
    .catch(() => undefined)
    .then((s) => {
      if (!s) asked = undefined;
      return s;
    });
  return asked;
}

// useServerStatus is GET /status, undefined until it answers (or when it
// failed).
export function useServerStatus(): ServerStatus | undefined {
  const [status, setStatus] = useState<ServerStatus>();
  useEffect(() => {
    let live = true;
    void fetchStatus().then((s) => live && setStatus(s));
    return () => {
      live = false;
    };
  }, []);
  return status;
}

// missingProvider is why messages would fail for want of a model
// provider, or undefined when all is well or not known. Without an agent:
// the default provider cannot be called (and, worse, no provider has a
// key: ollama needs none, so it always counts as configured). With one:
// the provider that agent uses cannot be called and the agent has no key
// of its own in settings.secrets.
export function missingProvider(status: ServerStatus | undefined, agent?: Agent): string | undefined {
  if (!status) return undefined;
  const name = (agent?.modelProvider || status.defaultProvider) as Schemas["ModelProviderName"];
  const setting = providerSetting[name] ?? "its key";
  if (status.providers.find((p) => p.name === name)?.configured !== false) return undefined;
  if (agent) {
    const secrets = agent.settings.secrets as Record<string, unknown> | undefined;
    if (secrets?.[setting] !== undefined) return undefined;
    return (
      `The server has no key for ${name}, which ${agent.name} uses: set ${setting} in the server's environment ` +
      `and restart it, give ${agent.name} its own in settings.secrets, or pick a configured provider.`
    );
  }
  const keyed = status.providers.filter((p) => p.name !== "ollama");
  if (!keyed.some((p) => p.configured)) {
    return (
      "No provider key is configured: set OPENAI_API_KEY (or ANTHROPIC_API_KEY, GROQ_API_KEY, GOOGLE_API_KEY) " +
      "in the server's environment and restart it, give an agent its own key in its settings.secrets, or point " +
      "OLLAMA_HOST at a local Ollama and make it an agent's provider."
    );
  }
  return (
    `The default provider, ${name}, has no key: set ${setting} in the server's environment, or give each ` +
    `agent a provider that has one (${keyed
      .filter((p) => p.configured)
      .map((p) => p.name)
      .join(", ")}).`
  );
}

// ProviderNotice shows missingProvider's reason, if any.
export function ProviderNotice({ agent }: { agent?: Agent }) {
  const why = missingProvider(useServerStatus(), agent);
  if (!why) return null;
  return (
    <div class="notice provider-notice" role="note">
      <p>
        <strong>Messages cannot be answered yet.</strong> {why}
      </p>
    </div>
  );
}
