// Package llmtest provides local HTTP servers that speak the real wire
// formats of the model providers llm supports (OpenAI chat completions,
// used for openai, groq and google; Anthropic Messages; ollama /api/chat),
// so the llm adapters and the server's end-to-end tests run against the
// real langchaingo clients without touching the internet.
//
// A Server answers with a configurable Reply (text, usage, model, HTTP error
// with the provider's error body, Retry-After, slow or broken streams, a
// hang) and records every request it received.
package llmtest
