package server

import (
	"fmt"
	"net/http"
	"testing"
)

func TestListAgents(t *testing.T) {
	h := newHarness(t)
	names := []string{"delta", "alpha", "echo", "charlie", "bravo"}
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = h.createAgent(map[string]any{"name": n, "clients": []string{"discord"}})
	}
	// alpha and charlie become inactive.
	for _, i := range []int{1, 3} {
		h.do(request{method: "PATCH", path: "/v1/agents/" + ids[i], key: h.writeKey, body: map[string]any{"status": "inactive"}})
	}
	list := func(query string) (got []string, pagination map[string]any) {
		t.Helper()
		res := h.do(request{method: "GET", path: "/v1/agents" + query, key: h.readKey})
		if res.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", query, res.Code, res.Body)
		}
		d := res.Data(t)
		for _, a := range d["agents"].([]any) {
			got = append(got, a.(map[string]any)["name"].(string))
		}
		return got, d["pagination"].(map[string]any)
	}
	cases := []struct {
		query, want, pagination string
	}{
		{"", "[bravo charlie echo alpha delta]", "map[currentPage:1 itemsPerPage:20 totalItems:5 totalPages:1]"},
		{"?order=asc", "[delta alpha echo charlie bravo]", ""},
		{"?sortBy=name", "[echo delta charlie bravo alpha]", ""},
		{"?sortBy=name&order=asc", "[alpha bravo charlie delta echo]", ""},
		{"?sortBy=status&order=asc", "[delta echo bravo alpha charlie]", ""},
		{"?sortBy=createdAt&order=desc", "[bravo charlie echo alpha delta]", ""},
		{"?status=inactive&sortBy=name&order=asc", "[alpha charlie]", "map[currentPage:1 itemsPerPage:20 totalItems:2 totalPages:1]"},
		{"?status=error", "[]", "map[currentPage:1 itemsPerPage:20 totalItems:0 totalPages:0]"},
		{"?limit=2&page=2&sortBy=name&order=asc", "[charlie delta]", "map[currentPage:2 itemsPerPage:2 totalItems:5 totalPages:3]"},
		{"?limit=2&page=3&sortBy=name&order=asc", "[echo]", ""},
		{"?limit=2&page=9", "[]", "map[currentPage:9 itemsPerPage:2 totalItems:5 totalPages:3]"},
		{"?limit=100", "[bravo charlie echo alpha delta]", ""},
		// (page-1)*limit would overflow int64 and wrap to the first page.
		{"?limit=4&page=4611686018427387905", "[]", "map[currentPage:4.611686018427388e+18 itemsPerPage:4 totalItems:5 totalPages:2]"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			got, p := list(tc.query)
			if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && got == nil) {
				t.Errorf("agents = %v, want %s", got, tc.want)
			}
			if tc.pagination != "" && fmt.Sprint(p) != tc.pagination {
				t.Errorf("pagination = %v, want %s", p, tc.pagination)
			}
		})
	}
	for _, tc := range []errorCase{
		{name: "limit 0", req: request{method: "GET", path: "/v1/agents?limit=0", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "limit"},
		{name: "limit 101", req: request{method: "GET", path: "/v1/agents?limit=101", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "limit"},
		{name: "page 0", req: request{method: "GET", path: "/v1/agents?page=0", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "page"},
		{name: "page abc", req: request{method: "GET", path: "/v1/agents?page=abc", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "page", reason: "integer"},
		{name: "bad status", req: request{method: "GET", path: "/v1/agents?status=sleeping", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "status"},
		{name: "bad sortBy", req: request{method: "GET", path: "/v1/agents?sortBy=model", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "sortBy"},
		{name: "bad order", req: request{method: "GET", path: "/v1/agents?order=up", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "order"},
		{name: "no key", req: request{method: "GET", path: "/v1/agents"}, status: 401, code: "UNAUTHORIZED"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
}
