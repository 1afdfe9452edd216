// Package a2a makes each agent an A2A server (the Agent2Agent protocol,
// https://a2a-protocol.org): its agent card and the JSON-RPC binding's
// SendMessage, SendStreamingMessage and GetTask, in the shapes of protocol
// 1.0, and the 0.3 methods message/send, message/stream and tasks/get in
// the shapes of 0.3 (a request's method name tells the versions apart).
//
// A message's contextId is a room of the agent, domain.A2ARoom(contextId),
// and the message is one turn of package turn, like Send Message with that
// roomId: the same checks, concurrency cap, history, analytics, webhooks
// and tools. Each message makes a task, kept in the database
// (domain.A2ATask) so that GetTask answers on every replica, for
// domain.A2ATaskRetention after the task last changed. SendMessage always
// waits for the reply: its task is completed or failed when answered.
//
// The package knows JSON-RPC but not HTTP: server/ authenticates, takes
// the rate limits and hands a Call to Handler.Serve, which answers a Reply
// (one JSON-RPC response, or a stream of them that server/ writes as
// server-sent events). Errors of turns and of the store are put in the
// API's terms by server/'s one mapping (Config.Explain) and from there in
// JSON-RPC's. It depends on the small interfaces it declares (Turns, Tasks).
//
// wire.go has the 1.0 shapes, legacy.go the 0.3 ones, jsonrpc.go the
// envelope and the error codes, card.go the agent card, handler.go the
// methods.
package a2a
