// Drives agentd with the AI SDK's default OpenAI provider
// (`@ai-sdk/openai`'s `openai(model)`, which speaks the Responses API),
// for cmd/agentd's TestAISDKOpenAIProvider: generateText, then streamText,
// printing what the SDK saw as one JSON object on stdout. OPENAI_BASE_URL
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
