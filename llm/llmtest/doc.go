// Package llmtest provides local HTTP servers that speak the real wire
// formats of the model providers llm supports (OpenAI chat completions,
// used for openai, groq and google; Anthropic Messages; ollama /api/chat),
// so the llm adapters and the server's end-to-end tests run against the
// real langchaingo clients without touching the internet.
//
// A Server answers with a configurable Reply (text, tool calls, usage,
// model, HTTP error with the provider's error body, Retry-After, slow or
// broken streams, a hang) and records every request it received.
//
// A Reply with ToolCalls ends as a tool-use turn in each format, streamed
// or not, as the provider sends it: OpenAI's tool_calls with the arguments
// as text, streamed in index-tagged deltas, and finish_reason "tool_calls";
// Anthropic's tool_use blocks, streamed as input_json_delta pieces, and
// stop_reason "tool_use"; ollama's tool_calls with the arguments as an
// object, streamed whole in one line. Calls given without an id get one
// unique within the server ("call_<n>", "toolu_<n>"; ollama sends none).
//
// The OpenAI-format and ollama servers also answer embeddings requests
// (POST {URL}/embeddings, POST /api/embed) with deterministic vectors that
// put texts sharing words close together (see Embedding); RespondEmbeddings
// and FailEmbeddings set how, and EmbeddingRequests returns what came, apart
// from the chat requests.
//
// A Server refuses what its provider refuses, with the provider's 400, and
// fails the test that sent it (unless Lenient): an OpenAI-format request
// that OpenAI's published OpenAPI document (testdata/openai) does not
// admit, or a sampling member sent to a reasoning model; a Messages
// request without anthropic-version, with a member the API does not have,
// or with both temperature and top_p. NewGoogle is the OpenAI format with
// Google's error bodies, as its OpenAI-compatible endpoint sends them.
//
// A Recorded request reads back the same across the three formats: its
// Conversation, and the tools it offered (ToolNames, ToolSchema,
// ToolChoice), the tool calls it replays (ToolCallsSent) and the tool
// results it carries (ToolResults).
package llmtest
