// Package x connects agents to X (Twitter) through the X API v2, with a
// small client of its own over net/http signed with OAuth 1.0a (user
// context) by github.com/dghubble/oauth1: no maintained Go client can be
// pointed at a test server. It posts on a schedule, answers mentions and
// direct messages by polling, and implements connect.Platform: loops.go
// decides what to answer and sends it, and connect.Conn.Answer does the
// rest. xtest is a wire-format test server.
package x
