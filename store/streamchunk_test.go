package store

import (
	"bytes"
	"testing"

	"github.com/agentd/agentd/streamlog"
)

// FuzzStreamChunk: any bytes decode to events or an error, never a panic
// or an event past the chunk; events encoded decode back whole after any
// id. Seeds in testdata/fuzz/FuzzStreamChunk.
func FuzzStreamChunk(f *testing.F) {
	f.Add([]byte{}, []byte(`{"type":"token"}`), 3, 1)
	f.Add([]byte{0x80}, []byte{}, 1, 0)
	f.Fuzz(func(t *testing.T, raw, data []byte, last, after int) {
		last = max(1, last%1000+1)
		if got, err := decodeChunk(nil, raw, last, after); err == nil {
			for _, e := range got {
				if e.ID > last || e.ID <= after {
					t.Fatalf("event %d decoded from a chunk ending at %d, after %d", e.ID, last, after)
				}
			}
		}
		events := []streamlog.Event{{ID: last, Data: data}, {ID: last + 1, Data: raw}, {ID: last + 2}}
		got, err := decodeChunk(nil, encodeChunk(events), last+2, last)
		if err != nil || len(got) != 2 || got[0].ID != last+1 || !bytes.Equal(got[0].Data, raw) || got[1].ID != last+2 || len(got[1].Data) != 0 {
			t.Fatalf("round trip after %d: %+v %v", last, got, err)
		}
	})
}
