package server

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// encodedSummary is an entry of List Agents as the generated response
// encodes it: the reference agentListResponse is held to.
func encodedSummary(a domain.AgentSummary) gen.AgentSummary {
	clients := []gen.Platform{}
	var fields agent.Document
	if a.Clients != nil {
		fields = agent.Document{"clients": a.Clients}
	}
	for _, c := range fields.Clients() {
		clients = append(clients, gen.Platform(c))
	}
	return gen.AgentSummary{
		Id: a.ID, Name: a.Name, Status: gen.AgentStatus(a.Status),
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt),
		ModelProvider: gen.ModelProvider(a.ModelProvider), Model: a.Model, Clients: clients,
	}
}

// List Agents' response is written byte for byte as encoding/json writes
// the generated envelope, whatever the names, clients and times hold.
func TestAgentListResponseIsEncodingJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 14, 5, 1, 123_456_789, time.UTC)
	clients := func(raw string) json.RawMessage { return json.RawMessage(raw) }
	agents := []domain.AgentSummary{
		{ID: "agent_01", Name: "plain", ModelProvider: "openai", Model: "gpt-4o-mini", Status: domain.StatusActive,
			CreatedAt: t0, UpdatedAt: t0.Add(time.Hour), Clients: clients(`["discord","telegram"]`)},
		{ID: "agent_02", Name: `<b>"quoted" & \back\slashed</b>`, Model: "org/model:tag", Status: domain.StatusInactive,
			CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{ID: "agent_03", Name: "café \u2028 \u2029 \x01\n\t\x7f", Status: domain.StatusError,
			CreatedAt: t0.In(time.FixedZone("", -5*3600)), UpdatedAt: t0.In(time.FixedZone("", 3600+1800)), Clients: clients(`[]`)},
		{ID: "agent_04", Name: "invalid \xff\xfe utf-8", Clients: clients(`null`)},
		{ID: "agent_05", Name: "", Clients: clients(`[ "discord" , "slack" ]`)},
		{ID: "agent_06", Clients: clients(`["a\u003cb","\"q\""]`)},
		{ID: "agent_07", Clients: clients(`["<b>","é"]`)},
		{ID: "agent_08", Clients: clients(`"discord"`)},
		{ID: "agent_09", Clients: clients(`[1]`)},
		{ID: "agent_10", Clients: clients(`[`)},
		{ID: "agent_11", Clients: clients(`["a",]`)},
		{ID: "agent_12", Clients: clients(`["a""b"]`)},
		{ID: "agent_13", Clients: clients(`[,"a"]`)},
		{ID: "agent_14", Clients: clients(`["a"`)},
		{ID: "agent_15", Clients: clients(``)},
		{ID: "agent_16", Clients: clients(`[""]`)},
		{ID: "agent_17", Clients: json.RawMessage{}},
		{ID: "agent_18", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{ID: "agent_19", CreatedAt: time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("", -3600)), UpdatedAt: time.Date(0, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600))},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab <>&\"\\\x00\x1f\x7f\xc3\xa9\xe2\x80\xa8\xff")
	for range 300 {
		name := make([]byte, rng.IntN(12))
		for j := range name {
			name[j] = alphabet[rng.IntN(len(alphabet))]
		}
		raw := []byte(`["`)
		raw = append(raw, name...)
		raw = append(raw, `"]`...)
		agents = append(agents, domain.AgentSummary{ID: "agent_r", Name: string(name), Model: string(name),
			CreatedAt: time.Unix(rng.Int64N(1<<38)-1<<37, rng.Int64N(1e9)), UpdatedAt: time.Unix(rng.Int64N(253402300800), rng.Int64N(1e9)),
			Clients: clients(string(raw))})
	}
	pages := []gen.Pagination{
		pagination(1, 20, int64(len(agents))),
		pagination(4611686018427387905, 4, 5),
		pagination(9, 2, 0),
	}
	for i, page := range [][]domain.AgentSummary{agents, agents[:1], {}} {
		p := pages[i%len(pages)]
		list := gen.AgentList{Agents: make([]gen.AgentSummary, len(page)), Pagination: p}
		for j, a := range page {
			list.Agents[j] = encodedSummary(a)
		}
		want := httptest.NewRecorder()
		if err := (gen.ListAgents200JSONResponse{Body: gen.AgentListEnvelope{Success: true, Data: list}}).VisitListAgentsResponse(want); err != nil {
			t.Fatal(err)
		}
		got := httptest.NewRecorder()
		if err := (agentListResponse{agents: page, pagination: p}).VisitListAgentsResponse(got); err != nil {
			t.Fatal(err)
		}
		if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || len(got.Header()) != len(want.Header()) {
			t.Errorf("page %d: status %d, headers %v; want %d, %v", i, got.Code, got.Header(), want.Code, want.Header())
		}
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			g, w := got.Body.Bytes(), want.Body.Bytes()
			at := 0
			for at < min(len(g), len(w)) && g[at] == w[at] {
				at++
			}
			t.Errorf("page %d differs at byte %d:\n got  %q\n want %q", i, at, g[max(0, at-80):min(len(g), at+80)], w[max(0, at-80):min(len(w), at+80)])
		}
	}
}

func BenchmarkAgentListResponse(b *testing.B) {
	t0 := time.Date(2026, 11, 28, 14, 5, 1, 123_000_000, time.UTC)
	agents := make([]domain.AgentSummary, 20)
	for i := range agents {
		agents[i] = domain.AgentSummary{ID: "agent_01jf3k2m4n5p6q7r8s9t0v1w2x", Name: "agent-0042", ModelProvider: "openai", Model: "gpt-4o-mini",
			Status: domain.StatusActive, CreatedAt: t0, UpdatedAt: t0,
			Clients: json.RawMessage(`["discord","telegram"]`)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := (agentListResponse{agents: agents, pagination: pagination(1, 20, 10000)}).VisitListAgentsResponse(httptest.NewRecorder()); err != nil {
			b.Fatal(err)
		}
	}
}
