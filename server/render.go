package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// timestamp renders t as the contract's RFC 3339 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

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

// agentListResponse is List Agents' 200, written byte for byte as the
// generated response writes gen.AgentListEnvelope with encoding/json
// (members in the order of its struct fields, HTML characters escaped, a
// newline at the end), without building the envelope or reflecting over
// it. TestAgentListResponseIsEncodingJSON holds it to that.
type agentListResponse struct {
	agents     []domain.AgentSummary
	pagination gen.Pagination
}

var _ gen.ListAgentsResponseObject = agentListResponse{}

// timestampLayout is timestamp's layout.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// VisitListAgentsResponse writes the envelope.
func (r agentListResponse) VisitListAgentsResponse(w http.ResponseWriter) error {
	out := make([]byte, 0, 128+len(r.agents)*320)
	out = append(out, `{"data":{"agents":[`...)
	for i, a := range r.agents {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendAgentSummary(out, a)
	}
	p := r.pagination
	out = append(out, `],"pagination":{"currentPage":`...)
	out = strconv.AppendInt(out, int64(p.CurrentPage), 10)
	out = append(out, `,"itemsPerPage":`...)
	out = strconv.AppendInt(out, int64(p.ItemsPerPage), 10)
	out = append(out, `,"totalItems":`...)
	out = strconv.AppendInt(out, int64(p.TotalItems), 10)
	out = append(out, `,"totalPages":`...)
	out = strconv.AppendInt(out, int64(p.TotalPages), 10)
	out = append(out, "}},\"success\":true}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(out)
	return err
}

// appendAgentSummary appends a's gen.AgentSummary as encoding/json writes
// it: clients, createdAt, id, model, modelProvider, name, status,
// updatedAt.
func appendAgentSummary(out []byte, a domain.AgentSummary) []byte {
	out = append(out, `{"clients":`...)
	out = appendClients(out, a.Clients)
	out = append(out, `,"createdAt":"`...)
	out = appendTimestamp(out, a.CreatedAt) // digits, '-', ':', 'T', '.', 'Z': nothing to escape
	out = append(out, `","id":`...)
	out = appendJSONString(out, a.ID)
	out = append(out, `,"model":`...)
	out = appendJSONString(out, a.Model)
	out = append(out, `,"modelProvider":`...)
	out = appendJSONString(out, a.ModelProvider)
	out = append(out, `,"name":`...)
	out = appendJSONString(out, a.Name)
	out = append(out, `,"status":`...)
	out = appendJSONString(out, string(a.Status))
	out = append(out, `,"updatedAt":"`...)
	out = appendTimestamp(out, a.UpdatedAt)
	return append(out, `"}`...)
}

// appendTimestamp appends timestamp(t), writing the digits itself for the
// years 0 to 9999 (AppendFormat reads its layout anew at every call).
func appendTimestamp(out []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(out, timestampLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(out,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// appendClients appends the agent's stored "clients" member (nil for
// none) as the summary's clients: as it is when it is a compact array of
// strings that need no escaping (the store keeps it canonical, so it is),
// else decoded as agent.Document.Clients decodes it and encoded again as
// encoding/json would.
func appendClients(out []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(out, "[]"...)
	}
	if plainStringArray(raw) {
		return append(out, raw...)
	}
	out = append(out, '[')
	for i, c := range (agent.Document{"clients": raw}).Clients() {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, c)
	}
	return append(out, ']')
}

// plainStringArray reports whether raw is `[]` or `["a","b",...]` with
// strings of plain characters only (see plainJSON).
func plainStringArray(raw []byte) bool {
	n := len(raw)
	if n < 2 || raw[0] != '[' || raw[n-1] != ']' {
		return false
	}
	body := raw[1 : n-1]
	for len(body) > 0 {
		if body[0] != '"' {
			return false
		}
		end := 1
		for end < len(body) && body[end] != '"' {
			if !plainJSON(body[end]) {
				return false
			}
			end++
		}
		if end == len(body) {
			return false
		}
		body = body[end+1:]
		if len(body) > 0 {
			if body[0] != ',' || len(body) == 1 {
				return false
			}
			body = body[1:]
		}
	}
	return true
}

// plainJSON reports whether encoding/json writes c, in a string, as it
// is: printable ASCII but the quote, the backslash and the HTML
// characters it escapes.
func plainJSON(c byte) bool { return plainJSONBytes[c] }

var plainJSONBytes = func() (plain [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		plain[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return plain
}()

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON(s[i]) {
			b, _ := json.Marshal(s) // never fails for a string
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
