// Package llm talks to the model providers agentd supports (openai,
// anthropic, groq, google and ollama) and builds the system prompt from an
// agent's character.
//
// llm knows nothing about HTTP servers, the API or the store, and it never
// reads the environment: cmd/agentd fills a [Config] and passes it to [New].
// Package turn makes the calls (its Model interface is [Client]'s); server/
// only maps an [Error] to the API. The subpackage llmtest provides local
// servers speaking each provider's wire format, for this package's tests and
// those of server/ and cmd/agentd.
//
// # Calls
//
// [Client.Generate] and [Client.Stream] use the real langchaingo clients
// (llms/openai for openai, groq and google's OpenAI-compatible endpoint,
// llms/anthropic, llms/ollama), each built per call around a transport of
// ours (exchange) that sees every request and response. Failures are
// classified into a [Kind] with the provider's Retry-After; an unavailable
// provider is retried twice (100ms, 300ms) while nothing has been streamed.
//
// # langchaingo v0.1.14 quirks handled here
//
//   - openai always sends temperature (0 when unset), never sends top_p and
//     drops zero penalties; anthropic always sends temperature; ollama
//     always sends temperature 0, overriding the model's default. The
//     transport rewrites the sampling fields of the request body so that
//     exactly the options that were set reach the wire, less those today's
//     models refuse: OpenAI's reasoning models (o series, GPT-5 and later)
//     get no sampling field at all, Anthropic's no top_p beside a
//     temperature.
//   - Errors arrive as strings ("API returned unexpected status code: 429:
//     ..."), and openai replaces transport errors with generic messages. The
//     transport records the status, Retry-After, the provider's error body
//     and the transport error; openai.MapError / anthropic.MapError with
//     llms.IsRateLimitError / llms.IsAuthenticationError only classify what
//     that record cannot.
//   - A mid-stream error event leaks anthropic's reader goroutine (it keeps
//     reading after handing the error over an unbuffered channel); openai
//     ignores an error chunk and ollama a broken connection, both reporting
//     success. The transport ends the response body at a provider error
//     line, so langchaingo sees a clean end of stream, and records the
//     error and any read failure, which turn the call into an error.
//   - Usage sits under different GenerationInfo keys (PromptTokens... for
//     openai and ollama, InputTokens/OutputTokens for anthropic), each
//     Anthropic content block is its own choice, and the model that
//     answered is not reported at all: usage is normalized, the text
//     choices are joined, and the model is read from the reply on the wire.
//   - openai and anthropic read OPENAI_* and ANTHROPIC_API_KEY from the
//     environment as defaults; every such option is set explicitly.
//
// # Embeddings
//
// [Client.Embed] turns texts into vectors for ranking an agent's memories
// and knowledge by meaning. openai, google (its OpenAI-compatible endpoint,
// POST {base}/embeddings, through the openai client as for chat) and ollama
// have an embeddings API; [Client.EmbeddingModel] names the model
// ([DefaultEmbeddingModels], overridden by Config.EmbeddingModels) and
// anthropic and groq have none: Embed then fails with KindNotConfigured
// without calling anything, and callers rank by full text instead, as they
// do on any failure (which is why a failed batch is not retried). Each batch
// is one attempt through the same exchange transport as chat calls, so a
// failure is classified and redacted the same way. With langchaingo v0.1.14:
//
//   - Its embedders report a failure as a string ("API returned unexpected
//     status code: 429: ..."); the exchange records the status, Retry-After
//     and error body as for chat, with a wire format that leaves the
//     request body alone (the chat patch would write sampling options).
//   - The ollama client sends one /api/embed request per text, though the
//     endpoint takes a list, so ollama batches hold one text and each
//     request gets its own Timeout; openai and google get 96 texts a
//     request (Google's endpoint takes at most 100).
//   - embeddings.EmbedderImpl replaces newlines in the caller's slice in
//     place (advice for models before text-embedding-3), so it is not
//     used: batches are cut with embeddings.BatchTexts and the texts sent
//     as given.
//   - The openai client orders vectors as the reply lists them, not by
//     their index; OpenAI lists them in order.
//
// # Tools
//
// A [Request] offers Tools and carries the turn's Steps (each call with its
// result); a [Reply] returns the ToolCalls the model asked for. Package
// turn runs the loop; this package only speaks each wire format:
//
//   - The calls are read from the wire by the transport for every
//     provider, not from langchaingo's result: the openai client hands
//     each streamed tool-call delta to the streaming func as JSON text, as
//     if the model had written it, and appends the arguments of parallel
//     calls to the last call whatever their index. The transport takes
//     tool_calls out of the stream deltas it passes on (the text stays)
//     and gathers the calls by index itself.
//   - The ollama client neither sends tools nor reads tool calls, and its
//     messages carry text only: the ollama wire format writes `tools` and
//     the steps' assistant and `tool` messages into the request body, and
//     reads `message.tool_calls` (arguments as an object, no id) from the
//     reply.
//   - The anthropic client reads one part per AI or tool message, so each
//     call is replayed as its own assistant message followed by its result;
//     Anthropic refuses tool_use blocks in a request that defines no tools,
//     so the last, tool-less call of a turn still defines them and sends
//     tool_choice {"type": "none"}, which the client cannot set itself.
//   - Steps must carry arguments that are a JSON object (turn replays
//     others as {}): the anthropic client and ollama decode them into one.
package llm
