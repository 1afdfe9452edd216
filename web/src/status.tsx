// status.tsx: what the server says of itself (GET /status: its version,
// its default model provider and which providers it has a key for), and
// the notice that says what to do when an agent cannot reach a model.
import { useEffect, useState } from "preact/hooks";
import { type Agent, session } from "./api";

// ServerStatus is the answer of GET /status.
export type ServerStatus = {
  version: string;
  defaultProvider: string;
  providers: { name: string; configured: boolean }[];
};

// providerSetting is what configures each provider on the server.
export const providerSetting: Record<string, string> = {
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
  asked ??= fetch(`${location.origin}/v1/status`, {
    headers: { Authorization: `Bearer ${session.key() ?? ""}` },
    cache: "no-store",
  })
    .then(async (r) => (r.ok ? ((await r.json()) as { data: ServerStatus }).data : undefined))
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
// provider: none configured on the server at all, or not the one agent
// uses (unless the agent has its own key in settings.secrets). Undefined
// when all is well or not known.
export function missingProvider(status: ServerStatus | undefined, agent?: Agent): string | undefined {
  if (!status) return undefined;
  if (!status.providers.some((p) => p.configured)) {
    return (
      "No provider key is configured: set OPENAI_API_KEY (or ANTHROPIC_API_KEY, GROQ_API_KEY, GOOGLE_API_KEY, " +
      "or OLLAMA_HOST for a local Ollama) in the server's environment and restart it, or give an agent its own key " +
      "in its settings.secrets."
    );
  }
  if (!agent) return undefined;
  const name = agent.modelProvider || status.defaultProvider;
  const setting = providerSetting[name];
  const own = setting && (agent.settings.secrets as Record<string, unknown> | undefined)?.[setting] !== undefined;
  if (own || status.providers.find((p) => p.name === name)?.configured !== false) return undefined;
  return (
    `The server has no key for ${name}, which this agent uses: set ${setting ?? "its key"} in the server's ` +
    `environment and restart it, give this agent its own in settings.secrets, or pick a configured provider.`
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
