package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// streamEnd reads an ollama stream and returns how many text lines came
// and how it ended: "done", "error" (an error line), "broken" (the
// connection cut) or "stalled" (nothing more within the timeout).
func streamEnd(t *testing.T, srv *llmtest.Server) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/chat", strings.NewReader(`{"model":"m"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	texts := 0
	for sc.Scan() {
		var l ollamaLine
		_ = json.Unmarshal(sc.Bytes(), &l)
		switch {
		case l.Error != "":
			return texts, "error"
		case l.Done:
			return texts, "done"
		}
		texts++
	}
	if errors.Is(sc.Err(), context.DeadlineExceeded) {
		return texts, "stalled"
	}
	return texts, "broken"
}

func TestStreamBreakPoints(t *testing.T) {
	frags := []string{"a", " b", " c", " d"}
	for _, tc := range []struct {
		name  string
		reply llmtest.Reply
		texts int
		end   string
	}{
		{"whole", llmtest.Reply{Fragments: frags}, 4, "done"},
		{"fail midway", llmtest.Reply{Fragments: frags, FailMidStream: true}, 2, "error"},
		{"fail after 3", llmtest.Reply{Fragments: frags, FailMidStream: true, FailAfter: 3}, 3, "error"},
		{"fail first", llmtest.Reply{Fragments: frags, FailMidStream: true, FailAfter: -1}, 0, "error"},
		{"fail last", llmtest.Reply{Fragments: frags, FailMidStream: true, FailAfter: 9}, 4, "error"},
		{"drop after 2", llmtest.Reply{Fragments: frags, DropMidStream: true, FailAfter: 2}, 2, "broken"},
		{"stall after 1", llmtest.Reply{Fragments: frags, StallMidStream: true, FailAfter: 1}, 1, "stalled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOllama(t)
			srv.Respond(tc.reply)
			if texts, end := streamEnd(t, srv); texts != tc.texts || end != tc.end {
				t.Errorf("%d text lines then %s, want %d then %s", texts, end, tc.texts, tc.end)
			}
		})
	}
}
