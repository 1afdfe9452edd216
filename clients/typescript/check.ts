// check.ts calls every operation of openapi.yaml through openapi-fetch's
// client typed by the generated schema.d.ts. It is only type-checked
// (`make ts-check`), never run: it shows a generated TypeScript client can
// use the contract without casts, and the `calls` table below stops
// compiling when an operation is added to the contract and not called here.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type Schemas = components["schemas"];

// Methods are the HTTP methods a path item of the contract defines.
type Methods<P> = {
  [M in keyof P]-?: M extends "parameters" ? never : [P[M]] extends [undefined] ? never : M;
}[keyof P];

const client = createClient<paths>({
  baseUrl: "http://localhost:8080/v1",
  headers: { Authorization: "Bearer agk_0123456789abcdefghijklmnopqrstuv" },
});

const agentId = "agent_01jd3v8m4q2x7k9w5t6r0yzabc";
const agentPath = { params: { path: { agentId } } };

async function createAgent(): Promise<Schemas["AgentCreated"] | undefined> {
  const { data, error, response } = await client.POST("/agents", {
    body: {
      name: "Trading Assistant",
      bio: "Expert in DeFi protocols",
      clients: ["discord"],
      modelProvider: "openai",
      plugins: ["@elizaos/plugin-solana", { name: "@elizaos/plugin-solana", enabled: true }],
    },
  });
  if (error) {
    const code: Schemas["ErrorCode"] = error.error.code;
    console.log(code, error.error.details?.field, response.headers.get("Retry-After"));
    return undefined;
  }
  return data.data;
}

async function listAgents(): Promise<Schemas["AgentSummary"][]> {
  const sortBy: Schemas["AgentSortField"] = "name";
  const order: Schemas["SortOrder"] = "asc";
  const { data } = await client.GET("/agents", {
    params: { query: { page: 1, limit: 20, status: "active", sortBy, order } },
  });
  return data?.data.agents ?? [];
}

async function getAgent(): Promise<Schemas["Metrics"] | undefined> {
  const { data } = await client.GET("/agents/{agentId}", agentPath);
  return data?.data.metrics;
}

async function exportAgent(): Promise<string | undefined> {
  const include: Schemas["ExportInclude"][] = ["memories", "knowledge", "history"];
  const { data } = await client.GET("/agents/{agentId}/export", { params: { path: { agentId }, query: { include } } });
  return data?.data.agentd?.history?.[0]?.messages[0]?.text ?? data?.data.name;
}

async function updateAgent(): Promise<string[]> {
  const status: Schemas["AgentStatusInput"] = "inactive";
  const { data } = await client.PATCH("/agents/{agentId}", {
    ...agentPath,
    body: { status, personality: { tone: "formal" } },
  });
  return data?.data.changes ?? [];
}

async function deleteAgent(): Promise<string | undefined> {
  const { data, error } = await client.DELETE("/agents/{agentId}", agentPath);
  if (error?.error.code === "DELETE_PROTECTED") {
    return error.error.details?.protection;
  }
  return data?.data.deletedAt;
}

async function sendMessage(): Promise<Schemas["MessageMetadata"] | undefined> {
  const { data } = await client.POST("/agents/{agentId}/messages", {
    ...agentPath,
    body: { text: "What do you think about the current market?", userId: "user_123", roomId: "room_456" },
  });
  // The same operation streams when `stream` is true, so the reply is
  // either the JSON envelope or the event-stream text.
  if (data === undefined || typeof data === "string") {
    return undefined;
  }
  // 202 answers the run, which goes on (a background send).
  return "metadata" in data.data ? data.data.metadata : undefined;
}

async function sendInBackground(): Promise<string | undefined> {
  const strategy: Schemas["MultitaskStrategy"] = "merge";
  const { data } = await client.POST("/agents/{agentId}/messages", {
    ...agentPath,
    body: { text: "Summarise the week", userId: "user_123", background: true, multitaskStrategy: strategy },
  });
  if (data === undefined || typeof data === "string" || !("status" in data.data)) {
    return undefined;
  }
  return data.data.id;
}

async function listRuns(): Promise<string[]> {
  const status: Schemas["RunStatus"] = "requires_action";
  const { data } = await client.GET("/runs", { params: { query: { status, agentId, page: 1, limit: 20 } } });
  return (data?.data.items ?? []).map((r) => `${r.id} ${r.status} ${r.source}`);
}

async function listAgentRuns(): Promise<string[]> {
  const source: Schemas["RunSource"] = "telegram";
  const { data } = await client.GET("/agents/{agentId}/runs", { params: { path: { agentId }, query: { source } } });
  return (data?.data.items ?? []).map((r) => r.reply?.response ?? r.error?.code ?? r.status);
}

async function getRun(): Promise<string | undefined> {
  const { data } = await client.GET("/agents/{agentId}/runs/{runId}", {
    params: { path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" }, query: { wait: 30 } },
  });
  return data?.data.finishedAt ?? undefined;
}

async function cancelRun(): Promise<Schemas["RunStatus"] | undefined> {
  const { data } = await client.POST("/agents/{agentId}/runs/{runId}/cancel", {
    params: { path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
  });
  return data?.data.status;
}

// decideApprovals approves the one waiting call with edited arguments.
async function decideApprovals(): Promise<string | undefined> {
  const decision: Schemas["ApprovalDecision"] = {
    callId: "call_01jd3vb2k8r4m6n8p0q2s4t6vw",
    approve: true,
    arguments: { amount: 100 },
    reason: "capped",
  };
  const { data, error } = await client.POST("/agents/{agentId}/runs/{runId}/approvals", {
    params: { path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
    body: { decisions: [decision] },
  });
  if (error) {
    return error.error.code;
  }
  const waiting = data.data.requiredAction?.toolCalls.map((c) => c.name).join(",");
  return `${data.data.status} ${waiting ?? ""}`;
}

// describe narrows a stream event on its discriminator.
function describe(event: Schemas["StreamEvent"]): string {
  switch (event.type) {
    case "token":
      return event.content;
    case "tool_call":
      return `${event.name}(${JSON.stringify(event.arguments)})`;
    case "tool_result":
      return `${event.name}: ${event.ok ? event.result : "failed"}`;
    case "requires_action":
      return `waits for ${event.toolCalls.map((c) => c.name).join(", ")} until ${event.expiresAt}`;
    case "start":
      return `reply ${event.messageId}`;
    case "done":
      return `${event.messageId}${event.partial ? " (cut)" : ""}: ${event.metadata.tokensUsed} tokens, ${event.metadata.toolCalls?.length ?? 0} tool calls`;
    case "error":
      return event.error.message;
  }
}

// events describes the events of a stream body (each an id line and a
// data line).
function events(text: string): string[] {
  return text
    .split("\n\n")
    .map((frame) => frame.split("\n").find((line) => line.startsWith("data: ")))
    .filter((line): line is string => line !== undefined)
    .map((line) => describe(JSON.parse(line.slice("data: ".length)) as Schemas["StreamEvent"]));
}

async function streamMessage(): Promise<string[]> {
  const { response } = await client.POST("/agents/{agentId}/messages/stream", {
    params: { path: { agentId }, header: { "Idempotency-Key": "joke-1" } },
    body: { text: "Tell me a joke.", userId: "user_123" },
    parseAs: "stream",
  });
  return events(await response.text());
}

const messagePath = { params: { path: { agentId, messageId: "msg_01jd3vb2k8r4m6n8p0q2s4t6vw" } } };

async function resumeStream(): Promise<string[]> {
  const { response } = await client.GET("/agents/{agentId}/messages/{messageId}/stream", {
    params: { ...messagePath.params, header: { "Last-Event-ID": "12" } },
    parseAs: "stream",
  });
  return events(await response.text());
}

async function streamRun(): Promise<string[]> {
  const { response } = await client.GET("/agents/{agentId}/runs/{runId}/stream", {
    params: { path: { agentId, runId: "run_01jd3vb2k8r4m6n8p0q2s4t6vw" }, header: { "Last-Event-ID": "3" } },
    parseAs: "stream",
  });
  return events(await response.text());
}

async function cancelMessage(): Promise<boolean | undefined> {
  const { data } = await client.POST("/agents/{agentId}/messages/{messageId}/cancel", messagePath);
  return data?.data.partial;
}

const conversationPath = { params: { path: { agentId, conversationId: "conv_01jd3vb2k8r4m6n8p0q2s4t6vw" } } };

async function listConversations(): Promise<string[]> {
  const platform: Schemas["ConversationPlatform"] = "telegram";
  const { data } = await client.GET("/agents/{agentId}/conversations", {
    params: { path: { agentId }, query: { page: 1, limit: 20, userId: "user_123", roomId: "room_456", platform, q: "market" } },
  });
  return (data?.data.items ?? []).map((c) => c.title ?? c.id);
}

async function getConversation(): Promise<Schemas["ConversationKind"] | undefined> {
  const { data } = await client.GET("/agents/{agentId}/conversations/{conversationId}", conversationPath);
  return data?.data.kind;
}

async function listConversationMessages(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/conversations/{conversationId}/messages", {
    params: { ...conversationPath.params, query: { order: "desc", limit: 50 } },
  });
  return (data?.data.items ?? []).map((m) => `${m.role}${m.partial ? " (partial)" : ""}: ${m.text}`);
}

async function deleteConversation(): Promise<number | undefined> {
  const { data, error } = await client.DELETE("/agents/{agentId}/conversations/{conversationId}", conversationPath);
  if (error?.error.code === "CONVERSATION_NOT_FOUND") {
    return 0;
  }
  return data?.data.messagesDeleted;
}

async function getAgentAnalytics(): Promise<number[]> {
  const interval: Schemas["AnalyticsInterval"] = "day";
  const { data } = await client.GET("/agents/{agentId}/analytics", {
    params: { path: { agentId }, query: { from: "2026-11-01T00:00:00Z", to: "2026-11-21T00:00:00Z", interval } },
  });
  return (data?.data.series ?? []).map((b) => b.p50ResponseTime);
}

const webhookId = "wh_01jd3vc7m2k4n6p8q0r2s4t6vx";
const webhookPath = { params: { path: { webhookId } } };

async function createWebhook(): Promise<string | undefined> {
  const events: Schemas["WebhookEventSelector"][] = ["agent.status_changed", "message.completed"];
  const { data } = await client.POST("/webhooks", {
    body: { url: "https://hooks.example.com/agentd", events, description: "Ops alerts", agentId },
  });
  return data?.data.secret;
}

async function listWebhooks(): Promise<Schemas["Webhook"][]> {
  const { data } = await client.GET("/webhooks", { params: { query: { page: 1, limit: 20 } } });
  return data?.data.items ?? [];
}

async function getWebhook(): Promise<string | undefined> {
  const { data } = await client.GET("/webhooks/{webhookId}", webhookPath);
  return data?.data.disabledReason;
}

async function updateWebhook(): Promise<string[]> {
  const { data } = await client.PATCH("/webhooks/{webhookId}", { ...webhookPath, body: { enabled: true, events: ["*"] } });
  return data?.data.changes ?? [];
}

async function deleteWebhook(): Promise<string | undefined> {
  const { data } = await client.DELETE("/webhooks/{webhookId}", webhookPath);
  return data?.data.deletedAt;
}

async function rotateWebhookSecret(): Promise<string | undefined> {
  const { data } = await client.POST("/webhooks/{webhookId}/rotate-secret", webhookPath);
  return data?.data.secret;
}

async function testWebhook(): Promise<number> {
  const { response } = await client.POST("/webhooks/{webhookId}/test", webhookPath);
  return response.status;
}

async function listWebhookDeliveries(): Promise<(number | undefined)[]> {
  const status: Schemas["DeliveryStatus"] = "failed";
  const { data } = await client.GET("/webhooks/{webhookId}/deliveries", {
    params: { path: { webhookId }, query: { status, page: 1 } },
  });
  return (data?.data.items ?? []).map((d) => d.lastStatusCode);
}

async function retryWebhookDelivery(): Promise<boolean> {
  const { error } = await client.POST("/webhooks/{webhookId}/deliveries/{deliveryId}/retry", {
    params: { path: { webhookId, deliveryId: "whd_01jd3vd1a2b3c4d5e6f7g8h9jk" } },
  });
  return error?.error.code !== "DELIVERY_NOT_FOUND";
}

const scheduleId = "sch_01jd3vf0b4c6d8e0f2g4h6j8km";
const schedulePath = { params: { path: { agentId, scheduleId } } };

async function createSchedule(): Promise<string | null | undefined> {
  const target: Schemas["ScheduleTarget"] = { platform: "telegram", chatId: "-1001234567890" };
  const { data, error } = await client.POST("/agents/{agentId}/schedules", {
    ...agentPath,
    body: { name: "Morning digest", cron: "0 8 * * 1-5", timezone: "Europe/Berlin", text: "Summarize the news.", target },
  });
  if (error?.error.code === "INSUFFICIENT_QUOTA") {
    return `${error.error.details?.used} of ${error.error.details?.quota}`;
  }
  return data?.data.nextRunAt;
}

async function listSchedules(): Promise<(string | null)[]> {
  const { data } = await client.GET("/agents/{agentId}/schedules", { params: { path: { agentId }, query: { page: 1 } } });
  return (data?.data.items ?? []).map((s) => s.cron ?? s.at);
}

async function getSchedule(): Promise<string | null | undefined> {
  const { data, error } = await client.GET("/agents/{agentId}/schedules/{scheduleId}", schedulePath);
  if (error?.error.code === "SCHEDULE_NOT_FOUND") {
    return undefined;
  }
  return data?.data.lastError;
}

async function updateSchedule(): Promise<boolean | undefined> {
  const { data } = await client.PATCH("/agents/{agentId}/schedules/{scheduleId}", {
    ...schedulePath,
    body: { at: "2026-11-22T09:30:00Z", target: null, enabled: true },
  });
  return data?.data.enabled;
}

async function deleteSchedule(): Promise<string | undefined> {
  const { data } = await client.DELETE("/agents/{agentId}/schedules/{scheduleId}", schedulePath);
  return data?.data.deletedAt;
}

// A receiver's view of an event body, typed by the schemas of x-webhooks.
function describeEvent(e: Schemas["MessageCompletedEvent"]): string {
  return `${e.type} ${e.data.reply.metadata.model}: ${e.data.reply.text}`;
}

async function listConnections(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/connections", agentPath);
  return (data?.data.items ?? []).map((c) => `${c.platform}: ${c.state} ${c.account?.username ?? ""} ${c.reason}`);
}

async function listAgentTools(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/tools", agentPath);
  const source: Schemas["ToolSource"] = "mcp";
  return (data?.data.items ?? []).filter((t) => t.source === source && t.offered).map((t) => `${t.server}__${t.name}`);
}

async function createMemory(): Promise<Schemas["MemorySource"] | undefined> {
  const { data } = await client.POST("/agents/{agentId}/memories", {
    ...agentPath,
    body: { text: "Prefers short answers", userId: "user-42" },
  });
  return data?.data.source;
}

async function listMemories(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/memories", {
    params: { path: { agentId }, query: { userId: "user-42", q: "answers", page: 1, limit: 20 } },
  });
  return (data?.data.items ?? []).map((m) => m.text);
}

async function forgetUser(): Promise<number | undefined> {
  const { data } = await client.DELETE("/agents/{agentId}/memories", {
    params: { path: { agentId }, query: { userId: "user-42" } },
  });
  return data?.data.deleted;
}

async function deleteMemory(): Promise<boolean> {
  const { error } = await client.DELETE("/agents/{agentId}/memories/{memoryId}", {
    params: { path: { agentId, memoryId: "mem_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
  });
  return error?.error.code !== "MEMORY_NOT_FOUND";
}

async function createKnowledge(): Promise<number | undefined> {
  const { data } = await client.POST("/agents/{agentId}/knowledge", {
    ...agentPath,
    body: { name: "faq.md", text: "# Fees\n\nTrades cost 0.1%." },
  });
  return data?.data.chunks;
}

async function listKnowledge(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/knowledge", { params: { path: { agentId }, query: { page: 1 } } });
  return (data?.data.items ?? []).map((d) => d.name);
}

async function deleteKnowledge(): Promise<boolean> {
  const { error } = await client.DELETE("/agents/{agentId}/knowledge/{knowledgeId}", {
    params: { path: { agentId, knowledgeId: "kn_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
  });
  return error?.error.code !== "KNOWLEDGE_NOT_FOUND";
}

async function previewContext(): Promise<number | undefined> {
  const { data } = await client.POST("/agents/{agentId}/context-preview", {
    ...agentPath,
    body: { text: "What did I tell you about Rust?", userId: "user-42" },
  });
  return data?.data.estimatedTokens;
}

// callMcp speaks MCP's JSON-RPC, which the contract types loosely: an MCP
// client library is the way to use it.
async function callMcp(): Promise<unknown> {
  const { data } = await client.POST("/mcp", {
    body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    headers: { Accept: "application/json, text/event-stream" },
  });
  return data?.jsonrpc === "2.0" ? data["result"] : undefined;
}

// createChatCompletion talks to the agent in OpenAI's Chat Completions
// shapes: the answer is the completion, or the chunk stream when `stream` is
// true; errors are OpenAI's, not the envelope.
async function createChatCompletion(): Promise<string | undefined> {
  const role: Schemas["ChatCompletionRole"] = "user";
  const { data, error } = await client.POST("/chat/completions", {
    body: {
      model: agentId,
      user: "user_123",
      messages: [
        { role: "system", content: "ignored: the agent's character applies" },
        { role, content: [{ type: "text", text: "What do you think about the current market?" }] },
      ],
      stream_options: { include_usage: true },
    },
  });
  if (error) {
    const code: Schemas["OpenAIErrorCode"] = error.error.code;
    return `${error.error.type} ${code} ${error.error.param ?? ""}`;
  }
  if (typeof data === "string") {
    return data
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice("data: ".length)) as Schemas["ChatCompletionStreamEvent"])
      .map((event) => ("error" in event ? event.error.message : (event.choices[0]?.delta.content ?? "")))
      .join("");
  }
  return `${data.choices[0]?.message.content} (${data.usage.total_tokens} tokens)`;
}

// createResponse talks to the agent in OpenAI's Responses shapes: the
// response, or its events when `stream` is true; errors are OpenAI's.
async function createResponse(): Promise<string | undefined> {
  const role = "user";
  const { data, error, response } = await client.POST("/responses", {
    body: {
      model: agentId,
      instructions: "Answer briefly.",
      input: [{ role, content: [{ type: "input_text", text: "What do you think about the current market?" }] }],
      metadata: { ticket: "42" },
    },
  });
  if (error) {
    const code: Schemas["OpenAIErrorCode"] = error.error.code;
    return `${error.error.type} ${code} ${response.headers.get("agentd-ignored") ?? ""}`;
  }
  if (typeof data === "string") {
    return data
      .split("\n\n")
      .map((frame) => frame.split("\n").find((line) => line.startsWith("data: ")))
      .filter((line): line is string => line !== undefined)
      .map((line) => JSON.parse(line.slice("data: ".length)) as Schemas["ResponseStreamEvent"])
      .map((event) => `${event.sequence_number} ${event.type} ${event.delta ?? ""}`)
      .join("\n");
  }
  return describeResponse(data);
}

// describeResponse is a response's status, text and usage.
function describeResponse(r: Schemas["Response"]): string {
  const status: Schemas["ResponseStatus"] = r.status;
  const text = r.output.map((m) => m.content.map((c) => c.text).join("")).join("");
  return `${r.id} ${status} ${text} (${r.usage?.total_tokens ?? 0} tokens) ${r.error?.code ?? ""}`;
}

async function getResponse(): Promise<string | undefined> {
  const { data } = await client.GET("/responses/{responseId}", {
    params: { path: { responseId: "resp_01jd3vb2k8r4m6n8p0q2s4t6vw" }, query: { stream: true, starting_after: 4 } },
  });
  return typeof data === "string" ? data : data && describeResponse(data);
}

async function cancelResponse(): Promise<string | undefined> {
  const { data } = await client.POST("/responses/{responseId}/cancel", {
    params: { path: { responseId: "resp_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
  });
  return data && describeResponse(data);
}

async function deleteResponse(): Promise<boolean> {
  const { data } = await client.DELETE("/responses/{responseId}", {
    params: { path: { responseId: "resp_01jd3vb2k8r4m6n8p0q2s4t6vw" } },
  });
  return data?.deleted ?? false;
}

async function listResponseInputItems(): Promise<string[]> {
  const order: Schemas["SortOrder"] = "asc";
  const { data } = await client.GET("/responses/{responseId}/input_items", {
    params: { path: { responseId: "resp_01jd3vb2k8r4m6n8p0q2s4t6vw" }, query: { limit: 20, order } },
  });
  return (data?.data ?? []).map((i) => `${i.id} ${i.role}: ${i.content.map((c) => c.text).join("")}`);
}

async function getAgentSpend(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/spend", agentPath);
  const s = data?.data;
  return s ? [`day ${s.day.spentUsd}/${s.day.limitUsd ?? "none"}`, `month ${s.month.spentUsd}/${s.month.limitUsd ?? "none"}`] : [];
}

async function getAccount(): Promise<string[]> {
  const { data } = await client.GET("/account");
  const a = data?.data;
  return a ? [`${a.name} ${a.limits.tier} ${a.limits.rpm}`, `${a.budget.spent}/${a.budget.monthly ?? "none"}`] : [];
}

async function getStatus(): Promise<string[]> {
  const { data } = await client.GET("/status");
  return (data?.data.providers ?? []).filter((p) => p.configured).map((p) => p.name);
}

async function listModelPrices(): Promise<string[]> {
  const { data } = await client.GET("/models/prices");
  return (data?.data.items ?? []).map((p) => `${p.provider}/${p.model} ${p.input}/${p.output} (${p.source})`);
}

async function listModels(): Promise<string[]> {
  const { data } = await client.GET("/models");
  return (data?.data ?? []).map((m) => `${m.id} (${m.name}, ${m.owned_by})`);
}

async function getA2AAgentCard(): Promise<string[]> {
  const { data } = await client.GET("/agents/{agentId}/a2a/.well-known/agent-card.json", {
    params: { path: { agentId }, header: { "A2A-Version": "1.0" } },
  });
  // Both cards, 1.0's and 0.3's, list the interfaces.
  return (data?.supportedInterfaces ?? []).map((i: Schemas["A2AAgentInterface"]) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
}

async function callA2A(): Promise<string | undefined> {
  const role: Schemas["A2ARole"] = "ROLE_USER";
  const { data } = await client.POST("/agents/{agentId}/a2a", {
    params: { path: { agentId }, header: { "A2A-Version": "1.0" } },
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m1", role, contextId: "trip-42", parts: [{ text: "Hello" }] } },
    },
  });
  if (!data || typeof data === "string") {
    return data; // the streaming methods answer server-sent events
  }
  if (data.error) {
    return `${data.error.code} ${data.error.message}`;
  }
  const result = data.result;
  if (result && "task" in result && result.task) {
    const state: Schemas["A2ATaskState"] = result.task.status.state;
    return `${state} ${result.task.artifacts?.[0]?.parts[0]?.text ?? ""}`;
  }
  return undefined;
}

// calls has one entry per operation of the contract.
const calls: { [P in keyof paths]: { [M in Methods<paths[P]>]: () => Promise<unknown> } } = {
  "/agents": { post: createAgent, get: listAgents },
  "/agents/{agentId}": { get: getAgent, patch: updateAgent, delete: deleteAgent },
  "/agents/{agentId}/messages": { post: () => Promise.all([sendMessage(), sendInBackground()]) },
  "/agents/{agentId}/runs": { get: listAgentRuns },
  "/agents/{agentId}/runs/{runId}": { get: getRun },
  "/agents/{agentId}/runs/{runId}/cancel": { post: cancelRun },
  "/agents/{agentId}/runs/{runId}/approvals": { post: decideApprovals },
  "/agents/{agentId}/runs/{runId}/stream": { get: streamRun },
  "/runs": { get: listRuns },
  "/agents/{agentId}/messages/stream": { post: streamMessage },
  "/agents/{agentId}/messages/{messageId}/stream": { get: resumeStream },
  "/agents/{agentId}/messages/{messageId}/cancel": { post: cancelMessage },
  "/agents/{agentId}/conversations": { get: listConversations },
  "/agents/{agentId}/conversations/{conversationId}": { get: getConversation, delete: deleteConversation },
  "/agents/{agentId}/conversations/{conversationId}/messages": { get: listConversationMessages },
  "/agents/{agentId}/export": { get: exportAgent },
  "/agents/{agentId}/analytics": { get: getAgentAnalytics },
  "/agents/{agentId}/connections": { get: listConnections },
  "/agents/{agentId}/schedules": { post: createSchedule, get: listSchedules },
  "/agents/{agentId}/schedules/{scheduleId}": { get: getSchedule, patch: updateSchedule, delete: deleteSchedule },
  "/agents/{agentId}/tools": { get: listAgentTools },
  "/agents/{agentId}/memories": { post: createMemory, get: listMemories, delete: forgetUser },
  "/agents/{agentId}/memories/{memoryId}": { delete: deleteMemory },
  "/agents/{agentId}/knowledge": { post: createKnowledge, get: listKnowledge },
  "/agents/{agentId}/knowledge/{knowledgeId}": { delete: deleteKnowledge },
  "/agents/{agentId}/context-preview": { post: previewContext },
  "/agents/{agentId}/a2a/.well-known/agent-card.json": { get: getA2AAgentCard },
  "/agents/{agentId}/a2a": { post: callA2A },
  "/webhooks": { post: createWebhook, get: listWebhooks },
  "/webhooks/{webhookId}": { get: getWebhook, patch: updateWebhook, delete: deleteWebhook },
  "/webhooks/{webhookId}/rotate-secret": { post: rotateWebhookSecret },
  "/webhooks/{webhookId}/test": { post: testWebhook },
  "/webhooks/{webhookId}/deliveries": { get: listWebhookDeliveries },
  "/webhooks/{webhookId}/deliveries/{deliveryId}/retry": { post: retryWebhookDelivery },
  "/mcp": { post: callMcp },
  "/chat/completions": { post: createChatCompletion },
  "/models": { get: listModels },
  "/responses": { post: createResponse },
  "/responses/{responseId}": { get: getResponse, delete: deleteResponse },
  "/responses/{responseId}/cancel": { post: cancelResponse },
  "/responses/{responseId}/input_items": { get: listResponseInputItems },
  "/models/prices": { get: listModelPrices },
  "/status": { get: getStatus },
  "/account": { get: getAccount },
  "/agents/{agentId}/spend": { get: getAgentSpend },
};

export { calls, describeEvent };
