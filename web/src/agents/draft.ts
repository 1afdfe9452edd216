// draft.ts: what the agent form edits (a Draft), made from an agent and
// turned back into the members of a create or an update; the form's
// sections are form.tsx, form-tools.tsx, form-mcp.tsx, form-asks.tsx and
// form-budget.tsx.
import type { Agent, Schemas } from "../api";
import { jsonObjectOf, lines } from "../ui";

// mcpPlugins are the plugins that, enabled, make the agent use its MCP
// servers; the form enables the first.
export const mcpPlugins = ["@elizaos/plugin-mcp", "@agentd/plugin-mcp"];
// secretMask is what Get Agent shows for a secret; sent back, it keeps the
// stored value.
export const secretMask = "********";

// Draft is what the agent form edits; the API's members are built from it.
export type Draft = {
  name: string;
  bio: string;
  modelProvider: Schemas["ModelProvider"] | "";
  model: string;
  tone: string;
  goals: string;
  knowledge: string;
  clients: Schemas["Platform"][];
  deleteProtection: boolean;
  status: Schemas["AgentStatusInput"];
  // The tools: actions (a handler URL makes one a tool), how many model
  // calls of a turn may use them ("" for the default), the MCP servers and
  // whether the MCP plugin that uses them is enabled.
  actions: ActionDraft[];
  maxToolSteps: string;
  servers: ServerDraft[];
  mcp: boolean;
  // The agents it may ask with ask_agent: local ones by id, remote A2A
  // ones by name.
  allow: string[];
  remotes: RemoteDraft[];
  // The memory switches the form shows; the other members of memory are
  // kept as they are.
  memory: MemoryDraft;
  // settings.budget, in dollars as typed ("" for none).
  budget: BudgetDraft;
};

// budgetKeys are the members of settings.budget.
export const budgetKeys = ["daily", "monthly", "perUserDaily"] as const;

export type BudgetDraft = Record<(typeof budgetKeys)[number], string>;

// maxBudget is the largest budget the API takes, in dollars.
const maxBudget = 1_000_000;

// SectionProps are what each section of the agent form takes: the draft,
// where a change of it goes, and the error to show by its fields.
export type SectionProps = { draft: Draft; onChange: (d: Draft) => void; error: unknown };

export type MemoryDraft = Required<
  Pick<Schemas["Memory"], "longTermEnabled" | "rememberUsers" | "rememberConversations">
>;

// memoryDefaults are what the server takes for a missing switch.
export const memoryDefaults: MemoryDraft = {
  longTermEnabled: false,
  rememberUsers: true,
  rememberConversations: false,
};

// ActionDraft is an action; parameters is its JSON Schema as text, checked
// to be a JSON object before the form is sent. examples are kept as they
// are. requiresApproval makes each call wait for a person's decision.
export type ActionDraft = {
  name: string;
  description: string;
  examples: string[];
  handler: string;
  parameters: string;
  requiresApproval: boolean;
};

// ServerDraft is an MCP server; rest keeps the members the form does not
// show (a stdio server's command, args and env).
export type ServerDraft = {
  name: string;
  type: Schemas["McpTransport"];
  url: string;
  headers: HeaderDraft[];
  rest: Omit<Schemas["McpServer"], "type" | "url" | "headers">;
};

// HeaderDraft is a header sent to an MCP server or a remote agent; its
// value is a secret.
export type HeaderDraft = { name: string; value: string };

// RemoteDraft is a remote A2A agent: its card's URL and headers.
export type RemoteDraft = { name: string; url: string; headers: HeaderDraft[] };

export const emptyRemote: RemoteDraft = { name: "", url: "", headers: [] };

export const emptyAction: ActionDraft = {
  name: "",
  description: "",
  examples: [],
  handler: "",
  parameters: "",
  requiresApproval: false,
};
export const emptyServer: ServerDraft = { name: "", type: "streamable-http", url: "", headers: [], rest: {} };

export const emptyDraft: Draft = {
  name: "",
  bio: "",
  modelProvider: "",
  model: "",
  tone: "",
  goals: "",
  knowledge: "",
  clients: [],
  deleteProtection: false,
  status: "active",
  actions: [],
  maxToolSteps: "",
  servers: [],
  mcp: false,
  allow: [],
  remotes: [],
  memory: memoryDefaults,
  budget: { daily: "", monthly: "", perUserDaily: "" },
};

// headersOf are headers as the form edits them, and back.
const headersOf = (h: Record<string, string> | undefined): HeaderDraft[] =>
  Object.entries(h ?? {}).map(([name, value]) => ({ name, value }));
const headersFrom = (h: HeaderDraft[]): Record<string, string> =>
  Object.fromEntries(h.map(({ name, value }) => [name.trim(), value]));

// usesMCP is whether plugins holds an enabled MCP plugin.
function usesMCP(plugins: Schemas["Plugin"][]): boolean {
  return plugins.some((p) => mcpPlugins.includes(p.name) && p.enabled !== false);
}

export function draftOf(a: Agent): Draft {
  return {
    name: a.name,
    bio: a.bio.join("\n"),
    modelProvider: a.modelProvider,
    model: a.model,
    tone: a.personality.tone ?? "",
    goals: a.goals.join("\n"),
    knowledge: a.knowledge.join("\n"),
    clients: a.clients,
    deleteProtection: a.deleteProtection,
    status: a.status === "inactive" ? "inactive" : "active",
    actions: (a.actions ?? []).map((x) => ({
      name: x.name,
      description: x.description,
      examples: x.examples,
      handler: x.handler ?? "",
      parameters: x.parameters ? JSON.stringify(x.parameters, null, 2) : "",
      requiresApproval: x.requiresApproval === true,
    })),
    maxToolSteps: a.modelSettings?.maxToolSteps === undefined ? "" : String(a.modelSettings.maxToolSteps),
    servers: Object.entries(a.settings.mcp?.servers ?? {}).map(([name, { type, url, headers, ...rest }]) => ({
      name,
      type,
      url: url ?? "",
      headers: headersOf(headers),
      rest,
    })),
    mcp: usesMCP(a.plugins),
    allow: a.settings.agents?.allow ?? [],
    remotes: Object.entries(a.settings.agents?.remote ?? {}).map(([name, r]) => ({
      name,
      url: r.url,
      headers: headersOf(r.headers),
    })),
    memory: {
      longTermEnabled: a.memory?.longTermEnabled ?? memoryDefaults.longTermEnabled,
      rememberUsers: a.memory?.rememberUsers ?? memoryDefaults.rememberUsers,
      rememberConversations: a.memory?.rememberConversations ?? memoryDefaults.rememberConversations,
    },
    budget: budgetDraftOf(a.settings.budget),
  };
}

function budgetDraftOf(b: Schemas["Budget"] | undefined): BudgetDraft {
  const text = (v: number | undefined) => (v === undefined ? "" : String(v));
  return { daily: text(b?.daily), monthly: text(b?.monthly), perUserDaily: text(b?.perUserDaily) };
}

// budgetProblem is what is wrong with a budget as typed, as the API would
// refuse it: a number of dollars above 0 and at most 1,000,000, or empty
// for none.
export function budgetProblem(text: string): string | undefined {
  const t = text.trim();
  if (!t) return undefined;
  const v = Number(t);
  if (!Number.isFinite(v)) return "A budget is a number of dollars, such as 5 or 0.50.";
  if (v <= 0) return "A budget is more than $0: leave it empty for none.";
  if (v > maxBudget) return "A budget is at most $1,000,000.";
  return undefined;
}

// budgetOf is settings.budget as the form has it: the members typed,
// as numbers (check budgetProblem first).
function budgetOf(b: BudgetDraft): Schemas["Budget"] {
  return Object.fromEntries(budgetKeys.filter((k) => b[k].trim()).map((k) => [k, Number(b[k].trim())]));
}

// parametersOf is an action's parameters: undefined when the text is
// empty, the object it holds, or an Error saying why it is not one.
export function parametersOf(text: string): Schemas["JSONObject"] | undefined | Error {
  if (!text.trim()) return undefined;
  return jsonObjectOf(text, "The parameters", '{"type": "object"}');
}

// problemOf checks what the API cannot tell apart once it is sent (the
// JSON of parameters, names that would overwrite each other) and returns
// the input to focus and what is wrong, or undefined when all is well.
export function problemOf(d: Draft): { id: string; error: Error } | undefined {
  for (const k of budgetKeys) {
    const p = budgetProblem(d.budget[k]);
    if (p) return { id: `budget-${k}`, error: new Error(p) };
  }
  for (const [i, a] of d.actions.entries()) {
    const p = parametersOf(a.parameters);
    if (p instanceof Error)
      return { id: `action-${i}-parameters`, error: new Error(`Action ${a.name || i + 1}: ${p.message}`) };
  }
  return namedProblem(d.servers, "server", "MCP server") ?? namedProblem(d.remotes, "remote", "remote agent");
}

// namedProblem finds, among things of one kind (MCP servers, remote
// agents), the first without a name, named twice, or with a header so.
function namedProblem(
  list: { name: string; headers: HeaderDraft[] }[],
  id: string,
  kind: string,
): { id: string; error: Error } | undefined {
  const names = new Set<string>();
  for (const [i, item] of list.entries()) {
    const name = item.name.trim();
    if (!name || names.has(name)) {
      return {
        id: `${id}-${i}-name`,
        error: new Error(name ? `Two ${kind}s are named ${name}.` : `Name ${kind} ${i + 1}.`),
      };
    }
    names.add(name);
    const headers = new Set<string>();
    for (const [j, h] of item.headers.entries()) {
      const header = h.name.trim();
      if (!header || headers.has(header.toLowerCase())) {
        return {
          id: `${id}-${i}-header-${j}-name`,
          error: new Error(`Headers of ${kind} ${name}: ${header ? `two are named ${header}` : "one has no name"}.`),
        };
      }
      headers.add(header.toLowerCase());
    }
  }
  return undefined;
}

// membersOf is the request body the form stands for; agent, when editing,
// keeps the members the form does not show (of personality, settings,
// modelSettings and plugins). Check problemOf(d) first: parameters must
// parse.
export function membersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  const tools = toolMembersOf(d, agent);
  return {
    ...tools,
    ...budgetMembersOf(d, tools.settings ?? agent?.settings, agent),
    ...memoryMembersOf(d, agent),
    name: d.name,
    bio: lines(d.bio),
    modelProvider: d.modelProvider,
    ...(d.model.trim() ? { model: d.model.trim() } : {}),
    personality: { ...agent?.personality, tone: d.tone },
    goals: lines(d.goals),
    knowledge: lines(d.knowledge),
    clients: d.clients,
    deleteProtection: d.deleteProtection,
  };
}

// budgetMembersOf is settings with the form's budget when it differs from
// the agent's (none when creating): settings is replaced whole, so it is
// the settings already built (the tools section's) or the agent's, every
// other member kept, secrets masked as Get Agent gave them (which keeps
// them). Else nothing, so an untouched form changes nothing.
function budgetMembersOf(
  d: Draft,
  settings: Schemas["Settings"] | undefined,
  agent?: Agent,
): Schemas["AgentUpdateRequest"] {
  const budget = budgetOf(d.budget);
  const before = agent?.settings.budget ?? {};
  if (budgetKeys.every((k) => budget[k] === before[k])) return {};
  const { budget: _, ...rest } = settings ?? {};
  return { settings: { ...rest, ...(Object.keys(budget).length ? { budget } : {}) } as Schemas["Settings"] };
}

// memoryMembersOf is the memory member when the form changed a switch of
// it (from the agent's, or from the defaults when creating), keeping its
// other members; else nothing, so an untouched form changes nothing.
function memoryMembersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  const before = agent ? draftOf(agent).memory : memoryDefaults;
  const keys = Object.keys(memoryDefaults) as (keyof MemoryDraft)[];
  if (keys.every((k) => d.memory[k] === before[k])) return {};
  return { memory: { ...agent?.memory, ...d.memory } };
}

// toolMembersOf are the members of the form's tools section. Each is sent
// only when the agent has it or the form gives it a value, so saving a form
// whose tools were not touched changes nothing.
function toolMembersOf(d: Draft, agent?: Agent): Schemas["AgentUpdateRequest"] {
  const out: Schemas["AgentUpdateRequest"] = {};
  if (d.actions.length || agent?.actions) {
    out.actions = d.actions.map((a) => {
      const parameters = parametersOf(a.parameters);
      return {
        name: a.name,
        description: a.description,
        examples: a.examples,
        ...(a.handler.trim() ? { handler: a.handler.trim() } : {}),
        ...(parameters && !(parameters instanceof Error) ? { parameters } : {}),
        // Sent only when set, as the API's default is false: an untouched
        // form sends the actions back as it got them.
        ...(a.requiresApproval ? { requiresApproval: true } : {}),
      };
    });
  }
  const { maxToolSteps: _, ...modelSettings } = agent?.modelSettings ?? {};
  if (d.maxToolSteps.trim()) out.modelSettings = { ...modelSettings, maxToolSteps: Number(d.maxToolSteps) };
  else if (agent?.modelSettings) out.modelSettings = modelSettings;
  if (d.servers.length || agent?.settings.mcp?.servers) {
    const servers = Object.fromEntries(
      d.servers.map((sv): [string, Schemas["McpServer"]] => [
        sv.name.trim(),
        {
          ...sv.rest,
          type: sv.type,
          ...(sv.url.trim() ? { url: sv.url.trim() } : {}),
          ...(sv.headers.length ? { headers: headersFrom(sv.headers) } : {}),
        },
      ]),
    );
    out.settings = { ...agent?.settings, mcp: { ...agent?.settings.mcp, servers } } as Schemas["Settings"];
  }
  if (d.allow.length || d.remotes.length || agent?.settings.agents) {
    const remote = Object.fromEntries(
      d.remotes.map((r): [string, Schemas["RemoteAgent"]] => [
        r.name.trim(),
        { url: r.url.trim(), ...(r.headers.length ? { headers: headersFrom(r.headers) } : {}) },
      ]),
    );
    const agents: Schemas["AgentsSettings"] = { allow: d.allow, remote };
    out.settings = { ...agent?.settings, ...out.settings, agents } as Schemas["Settings"];
  }
  const plugins = agent?.plugins ?? [];
  if (d.mcp !== usesMCP(plugins)) {
    out.plugins = d.mcp
      ? plugins.some((p) => p.name === mcpPlugins[0])
        ? plugins.map((p) => (p.name === mcpPlugins[0] ? { ...p, enabled: true } : p))
        : [...plugins, { name: mcpPlugins[0]!, enabled: true }]
      : plugins.map((p) => (mcpPlugins.includes(p.name) ? { ...p, enabled: false } : p));
  }
  return out;
}
