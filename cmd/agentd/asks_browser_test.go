package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/chromedp/chromedp"
)

// TestConsoleAsksInBrowser walks the run tree and the agent form's asks:
// a run that asked another agent lists it (name, status, cost) and links
// to its run, whose page links back to the asker; the form shows the
// allowed agent checked, and adds a remote agent whose header comes back
// masked.
func TestConsoleAsksInBrowser(t *testing.T) {
	b := newBrowser(t)
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "10s"},
		"--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Billing", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create Billing", r, 201, "")
	billing := r.data(t)["id"].(string)
	r = c.do("POST", "/v1/agents", key, map[string]any{"name": "Support", "modelProvider": "openai", "model": "gpt-4o-mini",
		"settings": map[string]any{"agents": map[string]any{"allow": []string{billing}}}})
	expect(t, "create Support", r, 201, "")
	support := r.data(t)["id"].(string)
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "ask_agent", Arguments: `{"agent":"Billing","message":"What does Ann owe?"}`}}},
		llmtest.Reply{Text: "Ann owes 42."}, llmtest.Reply{Text: "You owe 42."})
	r = c.do("POST", "/v1/agents/"+support+"/messages", key, map[string]any{"text": "What do I owe?", "userId": "ann"})
	expect(t, "send", r, 200, "")
	runID := r.data(t)["runId"].(string)

	b.run("the asking run", chromedp.Navigate(in.base+"/"), signInWith(key),
		chromedp.Navigate(in.base+"/#/agents/"+support+"/runs/"+runID),
		until(`[...document.querySelectorAll("tr[data-child]")].some(r => r.textContent.includes("Billing") && r.textContent.toLowerCase().includes("completed"))`))
	b.shot("run-tree")
	b.run("the asked run", chromedp.Click(`tr[data-child] a[href^="#/agents/`+billing+`/runs/"]`, chromedp.ByQuery),
		until(`!!document.querySelector('.run-facts a[href="#/agents/`+support+`/runs/`+runID+`"]')`))

	save := chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery)
	b.run("the form", chromedp.Navigate(in.base+"/#/agents/"+support),
		until(`document.querySelector('#settings-agents-allow input[value="`+billing+`"]')?.checked === true`),
		chromedp.Click("#add-remote", chromedp.ByQuery), fill("#remote-0-name", "shipping"),
		fill("#remote-0-url", "https://shipping.example.com/.well-known/agent-card.json"),
		chromedp.Click("#remote-0-add-header", chromedp.ByQuery), fill("#remote-0-header-0-name", "Authorization"),
		fill("#remote-0-header-0-value", "Bearer sekrit"), save,
		until(`document.querySelector("#remote-0-header-0-value")?.value === "********"`))
	b.shot("agent-asks")
	b.checkOnlyFrom(in.base)
}
