// Package tools gives agents tools: the action handlers their characters
// name (a signed POST to an http or https URL) and the MCP servers their
// settings name (through the official MCP Go SDK). A caller's own tools
// (turn's built-in ones) are the caller's to offer and run beside a [Set].
//
// tools knows nothing of the API, the store or the model providers. Package
// turn builds a [Spec] from an agent, asks a [Service] for the agent's
// [Set] and runs the model's calls through it; what a turn is allowed to
// do with tools (how many steps, how results are cut) stays in turn.
//
// Every outbound connection goes through one HTTP client whose dialer
// refuses internal addresses (netguard) unless private networks are
// allowed; redirects are never followed.
package tools
