// a2a.mjs serves one A2A agent with the official A2A JavaScript SDK
// (@a2a-js/sdk, its Express server), for cmd/agentd's tests of remote
// asks:
//
//   PORT=0 A2A_TOKEN=secret [A2A_LEGACY=1] node a2a.mjs
//
// With A2A_LEGACY set its card offers only a protocol 0.3 interface (the
// SDK's 0.3 compatibility layer answers it). The agent answers each message with "echo: <text>" as a completed task
// holding one artifact. Every request, the card's included, must carry
// Authorization: Bearer $A2A_TOKEN (else 401), so the test sees agentd's
// headers arrive. It prints {"url": "<the card's URL>"} once listening.
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { Role, TaskState } from "@a2a-js/sdk";
import { randomUUID } from "node:crypto";

const token = process.env.A2A_TOKEN;
const legacy = Boolean(process.env.A2A_LEGACY);
const compat = { legacyCompat: { enabled: legacy } };
if (!token) {
  console.error("usage: PORT=<port> A2A_TOKEN=<token> node a2a.mjs");
  process.exit(2);
}

const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const textOf = (parts = []) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

// echo answers a message as a completed task with the echo as its artifact.
const echo = {
  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage.parts);
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [{ artifactId: randomUUID(), name: "reply", description: "", parts: [textPart(`echo: ${text}`)], metadata: undefined, extensions: [] }],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
app.use((req, res, next) => {
  if (req.get("Authorization") !== `Bearer ${token}`) {
    res.status(401).json({ error: "unauthorized" });
    return;
  }
  next();
});

const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: "Echo",
    description: "Echoes what it is told.",
    supportedInterfaces: [{ url: `${base}/a2a`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: legacy ? "0.3" : "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "Echoes text.", tags: ["echo"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, ...compat }));
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, ...compat }));
  console.log(JSON.stringify({ url: `${base}/.well-known/agent-card.json` }));
});
