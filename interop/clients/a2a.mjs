// a2a.mjs drives the official A2A JavaScript SDK (@a2a-js/sdk)
// against one agentd agent, for cmd/agentd's tests:
//
//   A2A_KEY=agk_... node a2a.mjs http://127.0.0.1:8080/v1/agents/agent_.../a2a/
//
// It discovers the agent from its card, sends a message, streams a second
// one and sends a follow-up in the same context (protocol 1.0), reads the
// first task back with GetTask, asks for a task that does not exist, and
// then does send, stream and GetTask again through the SDK's protocol 0.3
// transport. It prints one JSON object of what it saw; the test judges it.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { randomUUID } from "node:crypto";

const [agentURL] = process.argv.slice(2);
const key = process.env.A2A_KEY;
if (!agentURL || !key) {
  console.error("usage: A2A_KEY=<api key> node a2a.mjs <agent A2A URL ending in /a2a/>");
  process.exit(2);
}

// authFetch sends the API key with every request, the card's included,
// and notes the JSON-RPC methods called, to show which version was spoken.
let methods = [];
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  if (typeof init.body === "string") {
    methods.push(`${JSON.parse(init.body).method} (A2A-Version ${headers.get("A2A-Version") ?? "none"})`);
  }
  return fetch(url, { ...init, headers });
};

const message = (text, contextId) => ({
  message: {
    messageId: randomUUID(),
    contextId,
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
});

const textOf = (parts = []) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

const summary = (task) => ({
  id: task.id,
  contextId: task.contextId,
  state: TaskState[task.status?.state],
  reply: textOf(task.artifacts?.[0]?.parts),
  history: (task.history ?? []).map((m) => `${Role[m.role]}: ${textOf(m.parts)}`),
});

const event = (ev) => {
  const { $case, value } = ev.payload ?? {};
  switch ($case) {
    case "task":
      return { kind: "task", state: TaskState[value.status?.state] };
    case "artifactUpdate":
      return { kind: "artifactUpdate", text: textOf(value.artifact?.parts), append: value.append, lastChunk: value.lastChunk };
    case "statusUpdate":
      return { kind: "statusUpdate", state: TaskState[value.status?.state] };
  }
  return { kind: String($case) };
};

async function conversation(client, prefix) {
  const out = {};
  methods = [];
  const contextId = `${prefix}-${randomUUID()}`;
  const first = await client.sendMessage(message(`${prefix}: hello`, contextId));
  out.send = summary(first);
  out.stream = [];
  for await (const ev of client.sendMessageStream(message(`${prefix}: stream please`, contextId))) {
    out.stream.push(event(ev));
  }
  out.followUp = summary(await client.sendMessage(message(`${prefix}: and a follow-up`, contextId)));
  out.getTask = summary(await client.getTask({ tenant: "", id: first.id, historyLength: undefined }));
  try {
    await client.getTask({ tenant: "", id: "task_missing", historyLength: undefined });
    out.missingTask = "found";
  } catch (err) {
    out.missingTask = err?.name ?? String(err);
  }
  out.methods = [...new Set(methods)];
  return out;
}

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  }),
);

const client = await factory.createFromUrl(agentURL);
const card = await client.getAgentCard();
const result = {
  card: {
    name: card.name,
    description: card.description,
    streaming: card.capabilities?.streaming ?? false,
    interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`),
    skills: card.skills.map((s) => s.id),
  },
  v1: await conversation(client, "v1"),
};

// The same card, left with its 0.3 interface only, makes the SDK speak 0.3.
const legacyCard = { ...card, supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3") };
result.v03 = await conversation(await factory.createFromAgentCard(legacyCard), "v03");

console.log(JSON.stringify(result));
