// Command agentd is the agent management service in one binary: `agentd
// serve` runs the HTTP API, and the `accounts` and `keys` subcommands
// administer the accounts and API keys the API authenticates.
//
// All configuration is read here, from the environment and the flags of
// `agentd serve` (flags win), validated once and passed to the constructors
// of store, llm and server; no other package reads the environment. Run
// `agentd help` for the commands, flags and variables.
//
// The program is testable as a whole: main only wires the process (signals,
// exit code) around run, which takes its arguments, environment and output
// streams as parameters. `agentd serve` writes "listening on http://ADDR" to
// stderr once its listener is bound, which is how tests started on
// 127.0.0.1:0 learn the port.
package main
