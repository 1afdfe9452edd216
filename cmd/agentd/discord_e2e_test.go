package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/discord/discordtest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/bwmarrin/discordgo"
)

// TestDiscordEndToEnd runs `agentd serve` against a Discord test server and
// a provider test server: an agent given a bot token connects to the
// gateway, its state shows in the API, and a mention in a guild channel
// goes through the same turn as Send Message (provider, history, metrics)
// and back to the channel as a reply.
func TestDiscordEndToEnd(t *testing.T) {
	const token = "e2e.discord.token"
	e := startDiscordAgent(t, token, "Speaker", map[string]any{"channels": []string{"lobby"}})
	dc, openai, c, key, id, in, conn := e.dc, e.openai, e.c, e.key, e.id, e.in, e.connection
	openai.Respond(llmtest.Reply{Text: "Hi from Discord.", PromptTokens: 7, CompletionTokens: 5})
	if account, _ := conn()["account"].(map[string]any); account["username"] != "e2e_bot" || account["id"] != "4242" {
		t.Errorf("connection's account %v", account)
	}

	m := &discordgo.Message{ChannelID: "500", GuildID: "77", Content: "<@4242> hello", Author: &discordgo.User{ID: "99", Username: "ann"}}
	m.Mentions = dc.Mentions(m.Content)
	dc.Dispatch(token, m)
	testutil.Eventually(t, "the reply in the channel", func() error { return testutil.Equal("messages sent", len(dc.Sent(token)), 1) })
	if sent := dc.Sent(token)[0]; sent.Content != "Hi from Discord." || sent.ChannelID != "500" || sent.ReplyTo != m.ID {
		t.Errorf("sent %+v", sent)
	}
	if typing := dc.Typing(token); len(typing) == 0 || typing[0] != "500" {
		t.Errorf("typing %v", typing)
	}
	if n := openai.Count(); n != 1 {
		t.Errorf("provider called %d times", n)
	}
	checkTurnRecorded(t, c, key, id, platformTurn{platform: "discord", kind: "room", roomID: "discord:500",
		speaker: "discord:99", text: "@e2e_bot hello", reply: "Hi from Discord."}) // the mention as a name
	testutil.Eventually(t, "counters", func() error {
		if cn := conn(); cn["messagesIn"] != 1.0 || cn["messagesOut"] != 1.0 || cn["lastEventAt"] == nil {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})

	// Inactive closes the gateway connection within 5 s and says so.
	expect(t, "deactivate", c.do("PATCH", "/v1/agents/"+id, key, map[string]any{"status": "inactive"}), 200, "")
	testutil.Within(t, "disconnected", 5*time.Second, func() error {
		if cn := conn(); cn["state"] != "disconnected" || dc.Connected(token) != 0 {
			return fmt.Errorf("connection %v, %d gateway connections", cn, dc.Connected(token))
		}
		return nil
	})
	in.stop(t)
}

// discordE2E is `agentd serve` with one agent on a Discord test server.
type discordE2E struct {
	dc *discordtest.Server
	*platformE2E
}

// startDiscordAgent boots serve against a Discord test server whose bot
// e2e_bot (id 4242) has token and is in guild 77 with the channel lobby
// (500), creates the agent name with that token and settings.discord, and
// waits until its gateway connection is up.
func startDiscordAgent(t *testing.T, token, name string, discord map[string]any) *discordE2E {
	t.Helper()
	dc := discordtest.New(t)
	dc.AddBot(token, "4242", "e2e_bot", true)
	dc.AddChannel("77", "500", "lobby")
	settings := map[string]any{"secrets": map[string]string{"DISCORD_API_TOKEN": token}, "discord": discord}
	e := &discordE2E{dc: dc, platformE2E: startPlatformAgent(t, map[string]string{"DISCORD_API_URL": dc.URL}, "discord", name, settings)}
	testutil.Eventually(t, "the gateway connection", func() error { return testutil.Equal("gateway connections", dc.Connected(token), 1) })
	return e
}
