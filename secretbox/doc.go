// Package secretbox encrypts agent secrets at rest: AES-256-GCM under the
// operator's AGENTD_SECRET_KEY, a fresh random nonce per value, and the
// owner's id (the agent id) as associated data, so a sealed value copied
// onto another agent does not open. A sealed value is a string
// "enc:v1:<standard base64 of nonce+ciphertext>"; the prefix versions the
// format so a later scheme can be told apart.
package secretbox
