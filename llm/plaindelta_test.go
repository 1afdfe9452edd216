package llm

import (
	"testing"
)

// FuzzPlainDelta: a chunk plainDelta lets observe skip, decoded in full,
// changes nothing of the record but its model. Seeds in
// testdata/fuzz/FuzzPlainDelta.
func FuzzPlainDelta(f *testing.F) {
	for _, doc := range []string{
		`{"id":"c1","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" t1"},"finish_reason":null}]}`,
		`{"model":"m","choices":[{"delta":{},"finish_reason": "stop"}]}`,
		`{"model":"m","choices":[{"delta":{"content":"say \"usage\""},"finish_reason" : null}]}`,
		`{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
		`{"model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]}`,
		`{"error":{"message":"overloaded","type":"server_error"}}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !plainDelta(doc) {
			return
		}
		var rec record
		if (openaiFormat{}).observe(doc, &rec) || rec.provErr != nil || rec.complete || rec.usage != (Usage{}) || len(rec.toolCalls.calls) != 0 {
			t.Fatalf("a chunk skipped as a plain delta holds more: %+v", rec)
		}
	})
}

// TestPlainDelta: content deltas are plain, whatever their spacing; a
// finish reason, usage, tool calls or an error is not.
func TestPlainDelta(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"choices":[{"delta":{"content":" t1"},"finish_reason":null}]}`:            true,
		`{"choices":[{"delta":{"content":"x"},"finish_reason" :  null}]}`:           true,
		`{"choices":[{"delta":{"content":"say \"usage\" and \"error\""}}]}`:         true,
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`:                         false,
		`{"choices":[{"delta":{},"finish_reason": "length"}]}`:                      false,
		`{"choices":[],"usage":{"prompt_tokens":1}}`:                                false,
		`{"choices":[{"delta":{"tool_calls":[{"index":0}]},"finish_reason":null}]}`: false,
		`{"error":{"message":"x"}}`:                                                 false,
		`{"choices":[{"delta":{},"finish_reason":`:                                  false,
	} {
		if got := plainDelta([]byte(doc)); got != want {
			t.Errorf("plainDelta(%s) = %v, want %v", doc, got, want)
		}
	}
}
