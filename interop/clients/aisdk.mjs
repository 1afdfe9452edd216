// Drives agentd with the AI SDK's default OpenAI provider
// (`@ai-sdk/openai`'s `openai(model)`, which speaks the Responses API),
// for cmd/agentd's TestAISDKOpenAIProvider: generateText, a second turn
// that carries the first's messages (the SDK names the earlier reply by
// an item_reference), then streamText, printing what the SDK saw as one JSON object on stdout. OPENAI_BASE_URL
// (agentd's /v1), OPENAI_API_KEY (an agentd API key) and AGENTD_MODEL (an
// agent id) come from the environment.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const model = openai(process.env.AGENTD_MODEL);
const out = {};

const generated = await generateText({ model, prompt: "Hello from the AI SDK", maxRetries: 0 });
out.generate = { text: generated.text, finishReason: generated.finishReason, usage: generated.usage,
  responseId: generated.response.id };

// A chat app's next turn: the history as the SDK keeps it.
const second = await generateText({ model, maxRetries: 0, messages: [
  { role: "user", content: "Hello from the AI SDK" }, ...generated.response.messages,
  { role: "user", content: "And then?" },
] });
out.second = { text: second.text, sent: second.request.body };

let error = null;
const streamed = streamText({ model, system: "Be brief.", prompt: "Stream from the AI SDK", maxRetries: 0,
  onError: ({ error: e }) => { error = String(e); } });
let text = "";
let parts = 0;
for await (const part of streamed.textStream) {
  text += part;
  parts++;
}
out.stream = { text, parts, finishReason: await streamed.finishReason, usage: await streamed.usage, error };

process.stdout.write(JSON.stringify(out) + "\n");
