// Drives agentd with the official `openai` npm client, for cmd/agentd's
// TestOpenAINodeClient: it lists the models, asks for a completion, streams
// one with usage, sends its own tools (read back from the agentd-ignored
// header) and provokes an error, then prints what the client saw as
// one JSON object on stdout. Configuration comes from the environment, as
// the client reads it: OPENAI_BASE_URL (agentd's /v1), OPENAI_API_KEY (an
// agentd API key), and AGENTD_MODEL (an agent id).
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0, timeout: 30_000 }); // reads OPENAI_BASE_URL and OPENAI_API_KEY
const model = process.env.AGENTD_MODEL;
const out = {};

const models = [];
for await (const m of client.models.list()) {
  models.push({ id: m.id, object: m.object, owned_by: m.owned_by, created: m.created });
}
out.models = models;

const completion = await client.chat.completions.create({
  model,
  user: "js-user",
  messages: [
    { role: "system", content: "ignored" },
    { role: "user", content: "Hello from JS" },
  ],
});
out.completion = {
  object: completion.object,
  model: completion.model,
  content: completion.choices[0].message.content,
  finish_reason: completion.choices[0].finish_reason,
  usage: completion.usage,
};

const stream = await client.chat.completions.create({
  model,
  stream: true,
  stream_options: { include_usage: true },
  messages: [
    { role: "user", content: "earlier" },
    { role: "assistant", content: "before" },
    { role: "user", content: "Stream from JS" },
  ],
});
let text = "";
let chunks = 0;
let usage = null;
let finish = null;
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
  usage = chunk.usage ?? usage;
}
out.stream = { text, chunks, usage, finish_reason: finish };

// A client that brings its own tools and sampling, as LangChain's
// bindTools does: agentd answers with the agent's own, and says so.
const { response: toolsResponse } = await client.chat.completions
  .create({
    model,
    messages: [{ role: "user", content: "use the tool" }],
    tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }],
    tool_choice: "auto",
    temperature: 0.2,
  })
  .withResponse();
out.ignored = toolsResponse.headers.get("agentd-ignored");

try {
  await client.chat.completions.create({ model: "agent_missing", messages: [{ role: "user", content: "hi" }] });
  out.error = null;
} catch (err) {
  if (!(err instanceof OpenAI.APIError)) throw err;
  out.error = {
    class: err.constructor.name,
    status: err.status,
    type: err.type,
    code: err.code,
    param: err.param,
    message: err.message,
  };
}

process.stdout.write(JSON.stringify(out) + "\n");
