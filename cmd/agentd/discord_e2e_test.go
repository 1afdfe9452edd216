package main

import (
	"fmt"
	"net/http"
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
	dc := discordtest.New(t)
	dc.AddBot(token, "4242", "e2e_bot", true)
	dc.AddChannel("77", "500", "lobby")
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Text: "Hi from Discord.", PromptTokens: 7, CompletionTokens: 5})
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "DISCORD_API_URL": dc.URL}
	in, key := bootUnlimited(t, env)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}

	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Speaker", "clients": []string{"discord"},
		"settings": map[string]any{"secrets": map[string]string{"DISCORD_API_TOKEN": token}, "discord": map[string]any{"channels": []string{"lobby"}}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	conn := func() map[string]any {
		return c.do("GET", "/v1/agents/"+id+"/connections", key, nil).data(t)["items"].([]any)[0].(map[string]any)
	}
	testutil.Eventually(t, "connected", func() error {
		cn := conn()
		account, _ := cn["account"].(map[string]any)
		if cn["state"] != "connected" || account["username"] != "e2e_bot" || account["id"] != "4242" || dc.Connected(token) != 1 {
			return fmt.Errorf("connection %v, %d gateway connections", cn, dc.Connected(token))
		}
		return nil
	})

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
	transport.CloseIdleConnections()
	in.stop(t)
}
