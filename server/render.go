package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// timestamp renders t as the contract's RFC 3339 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// The first years a time given by a client may have: any a timestamp can
// show, and, for a time an id is made of (an imported one), the first a
// ULID can carry.
const (
	firstShownYear = 1
	firstIDYear    = 1970
)

// checkYears refuses a time the client named name that falls outside the
// years first to 9999 in UTC: an offset may move a time of year 9999 or
// 0000 out of the years a timestamp can show, and a database keeps such a
// time wrongly (SQLite as the zero time) or answers it with five digits.
func checkYears(name string, t time.Time, first int) error {
	if y := t.UTC().Year(); y < first || y > 9999 {
		return invalidRequest(name, fmt.Sprintf("must fall within the years %04d to 9999 in UTC", first))
	}
	return nil
}

// secretMask replaces the value of every secret (see domain.SecretMask).
const secretMask = domain.SecretMask

// agentDocumentResponse is Get Agent's 200: the stored document, its
// metrics added, written into the envelope as it is. The generated
// response would encode the envelope with encoding/json, which validates
// and compacts the document again for nothing: the store wrote it compact.
type agentDocumentResponse struct {
	doc  domain.AgentDocument
	etag string
}

var _ gen.GetAgentResponseObject = agentDocumentResponse{}

// VisitGetAgentResponse writes the envelope around the document, with
// "metrics" as its last member.
func (r agentDocumentResponse) VisitGetAgentResponse(w http.ResponseWriter) error {
	body := r.doc.Body
	m := r.doc.Metrics
	out := make([]byte, 0, len(body)+160)
	out = append(out, `{"data":`...)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"metrics":{"totalMessages":`...)
	out = strconv.AppendInt(out, m.TotalMessages, 10)
	out = append(out, `,"totalConversations":`...)
	out = strconv.AppendInt(out, m.TotalConversations, 10)
	out = append(out, `,"uptime":"`...)
	out = strconv.AppendFloat(out, m.Uptime, 'f', 2, 64)
	out = append(out, "%\"}},\"success\":true}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", r.etag)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(out)
	return err
}

// agentSummary is one entry of List Agents.
func agentSummary(a domain.Agent) gen.AgentSummary {
	clients := []gen.Platform{}
	for _, c := range a.Fields.Clients() {
		clients = append(clients, gen.Platform(c))
	}
	return gen.AgentSummary{
		Id: a.ID, Name: a.Name, Status: gen.AgentStatus(a.Status),
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt),
		ModelProvider: gen.ModelProvider(a.ModelProvider), Model: a.Model, Clients: clients,
	}
}
