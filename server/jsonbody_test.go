package server

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckBodyDepth: the depth bound on the bytes, naming the member at
// fault, unfooled by brackets inside strings and escaped quotes.
func TestCheckBodyDepth(t *testing.T) {
	for _, c := range []struct {
		body  string
		field string // "" when accepted
	}{
		{`{"a":` + nested(32) + `}`, ""},
		{`{"a":` + nested(33) + `}`, "a"},
		{`{"a":1,"b\"c":` + nested(33) + `}`, `b"c`},
		{`{"a":"` + strings.Repeat("[", 100) + `","b":[]}`, ""},
		{`{"a":"\\","b":` + nested(33) + `}`, "b"},
		{`{"a":{"x":1,"y":` + nested(32) + `}}`, "a"},
		{nested(34), "body"},
	} {
		switch be := checkBodyDepth([]byte(c.body)); {
		case c.field == "" && be != nil:
			t.Errorf("%.60s: refused: %v", c.body, be)
		case c.field != "" && (be == nil || be.Field != c.field):
			t.Errorf("%.60s: %v, want a refusal naming %q", c.body, be, c.field)
		}
	}
}

// TestDeepMessageContextIsRefused: the message context, which the schema
// leaves open, has the same depth bound as every body, so it never reaches
// the provider.
func TestDeepMessageContextIsRefused(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "a"})
	body := `{"text":"hi","context":{"platform":"web","x":` + nested(40) + `}}`
	h.checkError(t, errorCase{req: request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey, body: body},
		status: 400, code: "INVALID_REQUEST", field: "context", reason: "deeper than 32"})
	if n := h.openai.Count(); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
}

// BenchmarkDeepBody takes bodies full of arrays nested as deep as allowed
// through the gate's depth check and the validator's decoder, at growing
// sizes: the cost grows with the size, not its square (before the depth was
// checked on the bytes, a 1 MB body of deep arrays took seconds of CPU).
func BenchmarkDeepBody(b *testing.B) {
	for _, size := range []int{16 << 10, 128 << 10, 1 << 20} {
		deep := nested(maxMemberDepth - 3) // plugins[i].config.x: the deepest allowed
		var body bytes.Buffer
		body.WriteString(`{"name":"a","plugins":[`)
		for i := 0; body.Len() < size-len(deep)-32; i++ {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"name":"p","config":{"x":%s}}`, deep)
		}
		body.WriteString("]}")
		raw := body.Bytes()
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if be := checkBodyDepth(raw); be != nil {
					b.Fatal(be)
				}
				if _, err := decodeJSONBody(bytes.NewReader(raw), nil, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOddMethodsShareOneMetricsLabel: methods made up by a client, without
// a key, do not each add series to /metrics.
func TestOddMethodsShareOneMetricsLabel(t *testing.T) {
	h := newHarness(t)
	for i := range 20 {
		req := h.httpRequest(request{method: fmt.Sprintf("MZ%dQ", i), path: "/v1/agents"})
		h.srv.Handler().ServeHTTP(httptest.NewRecorder(), req)
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); strings.Contains(body, "MZ1") || !strings.Contains(body, `method="other"`) {
		t.Errorf("metrics carry made-up methods:\n%s", body)
	}
}
