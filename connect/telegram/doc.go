// Package telegram connects agents to Telegram bots by long polling
// (getUpdates), through github.com/go-telegram/bot for the Bot API calls.
// It implements connect.Platform: rules.go decides which updates to answer,
// reads each back into a turn and sends the reply, and connect.Conn.Answer
// does the rest. telegramtest is a wire-format test server.
package telegram
