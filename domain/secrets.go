package domain

import "encoding/json"

// SecretMask is what Get Agent shows for every secret: the values under
// settings.secrets and the header values of each MCP server under
// settings.mcp.servers and of each remote agent under
// settings.agents.remote. Sent back in an update, it keeps the stored value
// of that secret.
const SecretMask = "********"

// Secrets are an agent's decrypted secrets, name to JSON value: the members
// of settings.secrets under their own names, the headers of each MCP
// server under HeaderSecretName(server, header) and those of each remote
// agent under RemoteHeaderSecretName(name, header).
type Secrets map[string]json.RawMessage

// String returns the secret name when it is a JSON string, else "".
func (s Secrets) String(name string) string {
	var v string
	_ = json.Unmarshal(s[name], &v) // not a string: ""
	return v
}

// HeaderSecretName is the secret name of header of MCP server: its seal
// binding and its key in Secrets.
func HeaderSecretName(server, header string) string {
	return "mcp." + server + ".headers." + header
}

// RemoteHeaderSecretName is the secret name of header of the remote agent
// name (settings.agents.remote), kept apart from the MCP servers' names.
func RemoteHeaderSecretName(name, header string) string {
	return "agents.remote." + name + ".headers." + header
}
