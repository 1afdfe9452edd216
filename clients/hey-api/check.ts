// check.ts calls every operation of openapi.yaml through the SDK that
// @hey-api/openapi-ts generates into sdk/ (a generator independent of
// clients/typescript's openapi-typescript). It is only type-checked
// (`make sdk-check`), never run: it shows a second generator accepts the
// contract and its SDK can be used without casts. The `calls` table below
// stops compiling when the SDK gains a function not called here, and
// clients/operations-called checks every operationId of openapi.yaml is
// named here (so an operation the generator dropped is caught too).
import { client } from "./sdk/client.gen";
import * as sdk from "./sdk/sdk.gen";
import type * as T from "./sdk/types.gen";

client.setConfig({
  baseUrl: "http://localhost:8080/v1",
  auth: () => "agk_0123456789abcdefghijklmnopqrstuv",
});

const agentId = "agent_01jd3v8m4q2x7k9w5t6r0yzabc";
const messageId = "msg_01jd3vb2k8r4m6n8p0q2s4t6vw";
const conversationId = "conv_01jd3vb2k8r4m6n8p0q2s4t6vw";
const webhookId = "wh_01jd3vc7m2k4n6p8q0r2s4t6vx";

async function createAgent(): Promise<T.AgentCreated | undefined> {
  const { data, error, response } = await sdk.createAgent({
    body: {
      name: "Trading Assistant",
      bio: "Expert in DeFi protocols",
      clients: ["discord"],
      modelProvider: "openai",
      plugins: ["@elizaos/plugin-solana", { name: "@elizaos/plugin-solana", enabled: true }],
    },
  });
  if (error) {
    const code: T.ErrorCode = error.error.code;
    console.log(code, error.error.details?.field, response.headers.get("Retry-After"));
    return undefined;
  }
  return data.data;
}

async function listAgents(): Promise<T.AgentSummary[]> {
  const sortBy: T.AgentSortField = "name";
  const order: T.SortOrder = "asc";
  const { data } = await sdk.listAgents({ query: { page: 1, limit: 20, status: "active", sortBy, order } });
  return data?.data.agents ?? [];
}

async function getAgent(): Promise<T.Metrics | undefined> {
  const { data } = await sdk.getAgent({ path: { agentId } });
  return data?.data.metrics;
}

async function updateAgent(): Promise<string[]> {
  const status: T.AgentStatusInput = "inactive";
  const { data } = await sdk.updateAgent({ path: { agentId }, body: { status, personality: { tone: "formal" } } });
  return data?.data.changes ?? [];
}

async function deleteAgent(): Promise<string | undefined> {
  const { data, error } = await sdk.deleteAgent({ path: { agentId } });
  if (error?.error.code === "DELETE_PROTECTED") {
    return error.error.details?.protection;
  }
  return data?.data.deletedAt;
}

async function exportAgent(): Promise<string | undefined> {
  const include: T.ExportInclude[] = ["memories", "knowledge", "history"];
  const { data } = await sdk.exportAgent({ path: { agentId }, query: { include } });
  return data?.data.agentd?.history?.[0]?.messages[0]?.text ?? data?.data.name;
}

async function sendMessage(): Promise<T.MessageMetadata | undefined> {
  const { data } = await sdk.sendMessage({
    path: { agentId },
    body: { text: "What do you think about the current market?", userId: "user_123", roomId: "room_456" },
  });
  // 202 answers the run, which goes on (a background send).
  return data && "metadata" in data.data ? data.data.metadata : undefined;
}

async function sendInBackground(): Promise<string | undefined> {
  const strategy: T.MultitaskStrategy = "merge";
  const { data } = await sdk.sendMessage({
    path: { agentId },
    body: { text: "Summarise the week", userId: "user_123", background: true, multitaskStrategy: strategy },
  });
  return data && "status" in data.data ? data.data.id : undefined;
}

async function streamRun(): Promise<string[]> {
  const { stream } = await sdk.streamRun({
    path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" },
    headers: { "Last-Event-ID": "3" },
  });
  const out: string[] = [];
  for await (const data of stream) {
    out.push(describe(streamEvent(data)));
  }
  return out;
}

async function listRuns(): Promise<string[]> {
  const status: T.RunStatus = "requires_action";
  const { data } = await sdk.listRuns({ query: { status, agentId, page: 1, limit: 20 } });
  return (data?.data.items ?? []).map((r: T.Run) => `${r.id} ${r.status} ${r.source}`);
}

async function listAgentRuns(): Promise<string[]> {
  const source: T.RunSource = "telegram";
  const { data } = await sdk.listAgentRuns({ path: { agentId }, query: { source } });
  return (data?.data.items ?? []).map((r: T.Run) => r.reply?.response ?? r.error?.code ?? r.status);
}

async function getRun(): Promise<string | undefined> {
  const { data } = await sdk.getRun({ path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" }, query: { wait: 30 } });
  return data?.data.finishedAt ?? undefined;
}

async function decideApprovals(): Promise<string | undefined> {
  const decision: T.ApprovalDecision = { callId: "call_01jd3vb2k8r4m6n8p0q2s4t6vw", approve: false, reason: "not today" };
  const { data, error } = await sdk.decideApprovals({
    path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" },
    body: { decisions: [decision] },
  });
  if (error) {
    return error.error.code;
  }
  return data?.data.status;
}

async function cancelRun(): Promise<T.RunStatus | undefined> {
  const { data } = await sdk.cancelRun({ path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" } });
  return data?.data.status;
}

// describe narrows a stream event on its discriminator.
function describe(event: T.StreamEvent): string {
  switch (event.type) {
    case "token":
      return event.content;
    case "tool_call":
      return `${event.name}(${JSON.stringify(event.arguments)})`;
    case "tool_result":
      return `${event.name}: ${event.ok ? event.result : "failed"}`;
    case "requires_action":
      return `run ${event.runId} waits for ${event.toolCalls.length} calls`;
    case "start":
      return `reply ${event.messageId}`;
    case "done":
      return `${event.messageId}${event.partial ? " (cut)" : ""}: ${event.metadata.tokensUsed} tokens`;
    case "error":
      return event.error.message;
  }
}

// streamEvent is one event of a message stream. The contract types the
// text/event-stream body as a whole (`EventStream`, a string: OpenAPI 3.0
// has no schema for each event), which the SDK takes for each event's data;
// its SSE client yields the data parsed as JSON, a StreamEvent.
function streamEvent(data: unknown): T.StreamEvent {
  return (typeof data === "string" ? JSON.parse(data) : data) as T.StreamEvent;
}

// The SDK's SSE client retries a failed or refused stream by sending the
// request again (with Last-Event-ID), without end unless bounded: the
// Idempotency-Key keeps a repeated POST from sending the message twice;
// resumeStream is the way to pick up a broken stream.
async function streamMessage(): Promise<string[]> {
  const { stream } = await sdk.streamMessage({
    path: { agentId },
    headers: { "Idempotency-Key": "joke-1" },
    body: { text: "Tell me a joke.", userId: "user_123" },
    sseMaxRetryAttempts: 1,
  });
  const out: string[] = [];
  for await (const data of stream) {
    out.push(describe(streamEvent(data)));
  }
  return out;
}

async function resumeStream(): Promise<string[]> {
  const { stream } = await sdk.resumeStream({
    path: { agentId, messageId },
    headers: { "Last-Event-ID": "12" },
    onSseEvent: (event) => console.log(event.id),
  });
  const out: string[] = [];
  for await (const data of stream) {
    out.push(describe(streamEvent(data)));
  }
  return out;
}

async function cancelMessage(): Promise<boolean | undefined> {
  const { data } = await sdk.cancelMessage({ path: { agentId, messageId } });
  return data?.data.partial;
}

async function listConversations(): Promise<string[]> {
  const platform: T.ConversationPlatform = "telegram";
  const { data } = await sdk.listConversations({
    path: { agentId },
    query: { page: 1, limit: 20, userId: "user_123", roomId: "room_456", platform, q: "market" },
  });
  return (data?.data.items ?? []).map((c: T.Conversation) => c.title ?? c.id);
}

async function getConversation(): Promise<T.ConversationKind | undefined> {
  const { data } = await sdk.getConversation({ path: { agentId, conversationId } });
  return data?.data.kind;
}

async function listConversationMessages(): Promise<string[]> {
  const { data } = await sdk.listConversationMessages({
    path: { agentId, conversationId },
    query: { order: "desc", limit: 50 },
  });
  return (data?.data.items ?? []).map((m) => `${m.role}${m.partial ? " (partial)" : ""}: ${m.text}`);
}

async function deleteConversation(): Promise<number | undefined> {
  const { data, error } = await sdk.deleteConversation({ path: { agentId, conversationId } });
  if (error?.error.code === "CONVERSATION_NOT_FOUND") {
    return 0;
  }
  return data?.data.messagesDeleted;
}

async function getAgentAnalytics(): Promise<number[]> {
  const interval: T.AnalyticsInterval = "day";
  const { data } = await sdk.getAgentAnalytics({
    path: { agentId },
    query: { from: "2026-11-01T00:00:00Z", to: "2026-11-21T00:00:00Z", interval },
  });
  return (data?.data.series ?? []).map((b) => b.p50ResponseTime);
}

async function listConnections(): Promise<string[]> {
  const { data } = await sdk.listConnections({ path: { agentId } });
  return (data?.data.items ?? []).map((c) => `${c.platform}: ${c.state} ${c.account?.username ?? ""} ${c.reason}`);
}

async function listAgentTools(): Promise<string[]> {
  const { data } = await sdk.listAgentTools({ path: { agentId } });
  const source: T.ToolSource = "mcp";
  return (data?.data.items ?? []).filter((t) => t.source === source && t.offered).map((t) => `${t.server}__${t.name}`);
}

async function createMemory(): Promise<T.MemorySource | undefined> {
  const { data } = await sdk.createMemory({ path: { agentId }, body: { text: "Prefers short answers", userId: "user-42" } });
  return data?.data.source;
}

async function listMemories(): Promise<string[]> {
  const { data } = await sdk.listMemories({
    path: { agentId },
    query: { userId: "user-42", q: "answers", page: 1, limit: 20 },
  });
  return (data?.data.items ?? []).map((m) => m.text);
}

async function forgetUser(): Promise<number | undefined> {
  const { data } = await sdk.forgetUser({ path: { agentId }, query: { userId: "user-42" } });
  return data?.data.deleted;
}

async function deleteMemory(): Promise<boolean> {
  const { error } = await sdk.deleteMemory({ path: { agentId, memoryId: "mem_01jd3vb2k8r4m6n8p0q2s4t6vw" } });
  return error?.error.code !== "MEMORY_NOT_FOUND";
}

async function createKnowledge(): Promise<number | undefined> {
  const { data } = await sdk.createKnowledge({ path: { agentId }, body: { name: "faq.md", text: "# Fees\n\nTrades cost 0.1%." } });
  return data?.data.chunks;
}

async function listKnowledge(): Promise<string[]> {
  const { data } = await sdk.listKnowledge({ path: { agentId }, query: { page: 1 } });
  return (data?.data.items ?? []).map((d) => d.name);
}

async function deleteKnowledge(): Promise<boolean> {
  const { error } = await sdk.deleteKnowledge({ path: { agentId, knowledgeId: "kn_01jd3vb2k8r4m6n8p0q2s4t6vw" } });
  return error?.error.code !== "KNOWLEDGE_NOT_FOUND";
}

async function previewContext(): Promise<number | undefined> {
  const { data } = await sdk.previewContext({
    path: { agentId },
    body: { text: "What did I tell you about Rust?", userId: "user-42" },
  });
  return data?.data.estimatedTokens;
}

async function getA2AAgentCard(): Promise<string[]> {
  const { data } = await sdk.getA2aAgentCard({ path: { agentId }, headers: { "A2A-Version": "1.0" } });
  // Both cards, 1.0's and 0.3's, list the interfaces.
  return (data?.supportedInterfaces ?? []).map((i: T.A2aAgentInterface) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
}

async function callA2A(): Promise<string | undefined> {
  const role: T.A2aRole = "ROLE_USER";
  const { data } = await sdk.callA2A({
    path: { agentId },
    headers: { "A2A-Version": "1.0" },
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m1", role, contextId: "trip-42", parts: [{ text: "Hello" }] } },
    },
  });
  if (data?.error) {
    return `${data.error.code} ${data.error.message}`;
  }
  const result = data?.result;
  if (result && "task" in result && result.task) {
    const state: T.A2aTaskState = result.task.status.state;
    return `${state} ${result.task.artifacts?.[0]?.parts[0]?.text ?? ""}`;
  }
  return undefined;
}

// callMcp speaks MCP's JSON-RPC, which the contract types loosely: an MCP
// client library is the way to use it.
async function callMcp(): Promise<unknown> {
  const { data } = await sdk.callMcp({
    body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    headers: { Accept: "application/json, text/event-stream" },
  });
  return data && typeof data === "object" && "result" in data ? data.result : undefined;
}

const scheduleId = "sch_01jd3vf0b4c6d8e0f2g4h6j8km";

async function createSchedule(): Promise<string | null | undefined> {
  const target: T.ScheduleTarget = { platform: "discord", chatId: "1234567890" };
  const { data, error } = await sdk.createSchedule({
    path: { agentId },
    body: { at: "2026-11-22T09:30:00Z", text: "Remind Ada of the demo.", userId: "ada", target },
  });
  if (error?.error.code === "INSUFFICIENT_QUOTA") {
    return `${error.error.details?.used} of ${error.error.details?.quota}`;
  }
  return data?.data.nextRunAt;
}

async function listSchedules(): Promise<(string | null)[]> {
  const { data } = await sdk.listSchedules({ path: { agentId }, query: { page: 1, limit: 20 } });
  return (data?.data.items ?? []).map((s: T.Schedule) => s.lastRunId);
}

async function getSchedule(): Promise<string | null | undefined> {
  const { data } = await sdk.getSchedule({ path: { agentId, scheduleId } });
  return data?.data.lastError;
}

async function updateSchedule(): Promise<string | null | undefined> {
  const { data } = await sdk.updateSchedule({ path: { agentId, scheduleId }, body: { cron: "@daily", timezone: "Asia/Tokyo", name: null } });
  return data?.data.nextRunAt;
}

async function deleteSchedule(): Promise<string | undefined> {
  const { data } = await sdk.deleteSchedule({ path: { agentId, scheduleId } });
  return data?.data.deletedAt;
}

const webhookEvents: T.WebhookEventSelector[] = ["agent.status_changed", "message.completed"];

async function createWebhook(): Promise<string | undefined> {
  const { data } = await sdk.createWebhook({
    body: { url: "https://hooks.example.com/agentd", events: webhookEvents, description: "Ops alerts", agentId },
  });
  return data?.data.secret;
}

async function listWebhooks(): Promise<T.Webhook[]> {
  const { data } = await sdk.listWebhooks({ query: { page: 1, limit: 20 } });
  return data?.data.items ?? [];
}

async function getWebhook(): Promise<string | undefined> {
  const { data } = await sdk.getWebhook({ path: { webhookId } });
  return data?.data.disabledReason;
}

async function updateWebhook(): Promise<string[]> {
  const { data } = await sdk.updateWebhook({ path: { webhookId }, body: { enabled: true, events: ["*"] } });
  return data?.data.changes ?? [];
}

async function deleteWebhook(): Promise<string | undefined> {
  const { data } = await sdk.deleteWebhook({ path: { webhookId } });
  return data?.data.deletedAt;
}

async function rotateWebhookSecret(): Promise<string | undefined> {
  const { data } = await sdk.rotateWebhookSecret({ path: { webhookId } });
  return data?.data.secret;
}

async function testWebhook(): Promise<number> {
  const { response } = await sdk.testWebhook({ path: { webhookId } });
  return response.status;
}

async function listWebhookDeliveries(): Promise<(number | undefined)[]> {
  const status: T.DeliveryStatus = "failed";
  const { data } = await sdk.listWebhookDeliveries({ path: { webhookId }, query: { status, page: 1 } });
  return (data?.data.items ?? []).map((d) => d.lastStatusCode);
}

async function retryWebhookDelivery(): Promise<boolean> {
  const { error } = await sdk.retryWebhookDelivery({
    path: { webhookId, deliveryId: "whd_01jd3vd1a2b3c4d5e6f7g8h9jk" },
  });
  return error?.error.code !== "DELIVERY_NOT_FOUND";
}

// A receiver's view of an event body, typed by the schemas of x-webhooks.
function describeEvent(e: T.MessageCompletedEvent): string {
  return `${e.type} ${e.data.reply.metadata.model}: ${e.data.reply.text}`;
}

// createChatCompletion talks to the agent in OpenAI's Chat Completions
// shapes; errors are OpenAI's, not the envelope.
async function createChatCompletion(): Promise<string | undefined> {
  const role: T.ChatCompletionRole = "user";
  const { data, error } = await sdk.createChatCompletion({
    body: {
      model: agentId,
      user: "user_123",
      messages: [
        { role: "system", content: "ignored: the agent's character applies" },
        { role, content: [{ type: "text", text: "What do you think about the current market?" }] },
      ],
    },
  });
  if (error) {
    const code: T.OpenAiErrorCode = error.error.code;
    return `${error.error.type} ${code} ${error.error.param ?? ""}`;
  }
  return `${data.choices[0]?.message.content} (${data.usage.total_tokens} tokens)`;
}

// createResponse talks to the agent in OpenAI's Responses shapes; errors
// are OpenAI's, not the envelope.
async function createResponse(): Promise<string | undefined> {
  const { data, error } = await sdk.createResponse({
    body: {
      model: agentId,
      instructions: "Answer briefly.",
      input: [{ role: "user", content: [{ type: "input_text", text: "What do you think about the current market?" }] }],
      background: true,
    },
  });
  if (error) {
    const code: T.OpenAiErrorCode = error.error.code;
    return `${error.error.type} ${code}`;
  }
  return typeof data === "string" ? data : describeResponse(data);
}

// describeResponse is a response's status, text and usage.
function describeResponse(r: T.Response): string {
  const status: T.ResponseStatus = r.status;
  const text = r.output.map((m) => m.content.map((c) => c.text).join("")).join("");
  return `${r.id} ${status} ${text} (${r.usage?.total_tokens ?? 0} tokens)`;
}

const responseId = "resp_01jd3vb2k8r4m6n8p0q2s4t6vw";

async function getResponse(): Promise<string | undefined> {
  const { data } = await sdk.getResponse({ path: { responseId } });
  return typeof data === "string" ? data : data && describeResponse(data);
}

async function cancelResponse(): Promise<string | undefined> {
  const { data } = await sdk.cancelResponse({ path: { responseId } });
  return data && describeResponse(data);
}

async function deleteResponse(): Promise<boolean> {
  const { data } = await sdk.deleteResponse({ path: { responseId } });
  return data?.deleted ?? false;
}

async function listResponseInputItems(): Promise<string[]> {
  const { data } = await sdk.listResponseInputItems({ path: { responseId }, query: { order: "asc" } });
  return (data?.data ?? []).map((i: T.ResponseInputMessage) => `${i.id} ${i.role}`);
}

async function getAgentSpend(): Promise<string[]> {
  const { data } = await sdk.getAgentSpend({ path: { agentId } });
  const s: T.AgentSpend | undefined = data?.data;
  return s ? [`day ${s.day.spentUsd}/${s.day.limitUsd ?? "none"}`, `month ${s.month.spentUsd}/${s.month.limitUsd ?? "none"}`] : [];
}

async function getAccount(): Promise<string[]> {
  const { data } = await sdk.getAccount();
  const a: T.Account | undefined = data?.data;
  return a ? [`${a.name} ${a.limits.tier} ${a.limits.rpm}`, `${a.budget.spent}/${a.budget.monthly ?? "none"}`] : [];
}

async function getStatus(): Promise<string[]> {
  const { data } = await sdk.getStatus();
  return (data?.data.providers ?? []).filter((p: T.ProviderStatus) => p.configured).map((p: T.ProviderStatus) => p.name);
}

async function listModelPrices(): Promise<string[]> {
  const { data } = await sdk.listModelPrices();
  return (data?.data.items ?? []).map((p: T.ModelPriceEntry) => `${p.provider}/${p.model} ${p.input}/${p.output} (${p.source})`);
}

async function listModels(): Promise<string[]> {
  const { data } = await sdk.listModels();
  return (data?.data ?? []).map((m) => `${m.id} (${m.name}, ${m.owned_by})`);
}

// calls has one entry per function of the generated SDK, each calling it:
// a function the SDK gains (an operation added to the contract) that is
// not called here stops this from compiling.
const calls: { [F in keyof typeof sdk]: () => Promise<unknown> } = {
  createAgent,
  listAgents,
  getAgent,
  updateAgent,
  deleteAgent,
  exportAgent,
  sendMessage: () => Promise.all([sendMessage(), sendInBackground()]),
  streamMessage,
  resumeStream,
  cancelMessage,
  listConversations,
  getConversation,
  listConversationMessages,
  deleteConversation,
  getAgentAnalytics,
  listConnections,
  createSchedule,
  listSchedules,
  getSchedule,
  updateSchedule,
  deleteSchedule,
  listAgentTools,
  createMemory,
  listMemories,
  forgetUser,
  deleteMemory,
  createKnowledge,
  listKnowledge,
  deleteKnowledge,
  previewContext,
  getA2aAgentCard: getA2AAgentCard,
  callA2A,
  callMcp,
  createWebhook,
  listWebhooks,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  testWebhook,
  listWebhookDeliveries,
  retryWebhookDelivery,
  createChatCompletion,
  listModels,
  createResponse,
  getResponse,
  cancelResponse,
  deleteResponse,
  listResponseInputItems,
  listModelPrices,
  getStatus,
  getAccount,
  getAgentSpend,
  listRuns,
  listAgentRuns,
  getRun,
  cancelRun,
  decideApprovals,
  streamRun,
};

export { calls, describeEvent };
