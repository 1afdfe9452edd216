// Drives agentd's Responses API with the official `openai` npm client, for
// cmd/agentd's TestResponsesNodeClient: a plain response, one continued
// with previous_response_id, one streamed with the client's event helpers,
// one in the background followed with retrieve until completed and
// replayed with starting_after, one cancelled; it prints what the client
// saw as one JSON object on stdout. Configuration comes from the
// environment, as the client reads it: OPENAI_BASE_URL (agentd's /v1),
// OPENAI_API_KEY (an agentd API key), and AGENTD_MODEL (an agent id);
// AGENTD_SLOW_MODEL is an agent whose replies take seconds.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0, timeout: 30_000 }); // reads OPENAI_BASE_URL and OPENAI_API_KEY
const model = process.env.AGENTD_MODEL;
const out = {};

const first = await client.responses.create({ model, input: "Hello from JS", instructions: "Be brief." });
out.plain = { id: first.id, status: first.status, text: first.output_text, usage: first.usage };

const next = await client.responses.create({ model, input: "And then?", previous_response_id: first.id });
out.continued = { previous: next.previous_response_id, text: next.output_text };

// The client's streaming helper: typed events, then the final response.
const stream = client.responses.stream({ model, input: [{ role: "user", content: "Stream from JS" }] });
let deltas = "";
const types = [];
const sequence = [];
stream.on("response.output_text.delta", (e) => {
  deltas += e.delta;
});
stream.on("event", (e) => {
  types.push(e.type);
  sequence.push(e.sequence_number);
});
const final = await stream.finalResponse();
out.stream = { deltas, types, sequence, text: final.output_text, status: final.status, usage: final.usage };

let bg = await client.responses.create({ model, input: "Later", background: true });
out.background = { initial: bg.status };
const polls = [];
while (bg.status === "queued" || bg.status === "in_progress") {
  await new Promise((resolve) => setTimeout(resolve, 50));
  bg = await client.responses.retrieve(bg.id);
  polls.push(bg.status);
}
out.background.final = bg.status;
out.background.text = bg.output_text;
const replay = await client.responses.retrieve(bg.id, { stream: true, starting_after: 2 });
out.background.replayed = [];
for await (const e of replay) {
  out.background.replayed.push([e.sequence_number, e.type]);
}

const slow = await client.responses.create({ model: process.env.AGENTD_SLOW_MODEL, input: "take your time", background: true });
await client.responses.cancel(slow.id);
let cancelled = await client.responses.retrieve(slow.id);
for (let i = 0; i < 200 && cancelled.status !== "cancelled"; i++) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  cancelled = await client.responses.retrieve(slow.id);
}
out.cancelled = cancelled.status;

const items = [];
for await (const item of client.responses.inputItems.list(first.id)) {
  items.push({ role: item.role, text: item.content[0].text });
}
out.items = items;

await client.responses.delete(first.id);
try {
  await client.responses.retrieve(first.id);
  out.deleted = null;
} catch (err) {
  if (!(err instanceof OpenAI.APIError)) throw err;
  out.deleted = { class: err.constructor.name, status: err.status, type: err.type, code: err.code };
}

process.stdout.write(JSON.stringify(out) + "\n");
