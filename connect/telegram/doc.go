// Package telegram connects agents to Telegram bots by long polling
// (getUpdates), through github.com/go-telegram/bot for the Bot API calls.
// It implements connect.Platform; telegramtest is a wire-format test
// server.
package telegram
