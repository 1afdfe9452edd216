package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// errCapReached stops the provider call once the reply reached its cap.
var errCapReached = errors.New("llm: reply reached its length cap")

// sink receives the fragments langchaingo streams, enforces the length cap
// and hands them on. With a cap, the reply must end at a word boundary
// (see CutAtWord) whatever path it takes, and a fragment once sent cannot
// be taken back: so the sink holds back the word in progress (pending)
// until a space shows it complete, and flushes it when the stream ends
// under the cap. The anthropic client calls it from its own reader
// goroutine, so its state is guarded.
type sink struct {
	onToken func(string) error
	max     int
	kick    func()

	mu        sync.Mutex
	buf       strings.Builder // what onToken was given
	pending   string          // held back: the word in progress
	capped    bool
	delivered bool
	abort     error
}

// newSink returns a sink for Stream, or nil for Generate (onToken nil).
func newSink(onToken func(string) error, maxRunes int, kick func()) *sink {
	if onToken == nil {
		return nil
	}
	return &sink{onToken: onToken, max: maxRunes, kick: kick}
}

// write is the langchaingo streaming func. Returning an error makes
// langchaingo stop reading and return.
func (s *sink) write(_ context.Context, chunk []byte) error {
	if len(chunk) == 0 {
		return nil // role-only deltas, ollama's final line
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capped {
		return errCapReached
	}
	if s.abort != nil {
		return s.abort
	}
	s.kick()
	if s.max <= 0 {
		return s.deliver(string(chunk))
	}
	s.pending += string(chunk)
	sent := s.buf.String()
	if all := sent + s.pending; utf8.RuneCountInString(all) > s.max {
		s.capped, s.pending = true, ""
		if cut := CutAtWord(all, s.max); len(cut) > len(sent) {
			if err := s.deliver(cut[len(sent):]); err != nil {
				return err
			}
		}
		return errCapReached
	}
	// Under the cap: send up to the last space, keep the word in progress.
	// The first word goes out as it comes: a cut never falls inside it
	// (CutAtWord cuts a first word only past the cap), so text without
	// spaces still streams.
	i := strings.LastIndexFunc(s.pending, unicode.IsSpace)
	if i < 0 {
		if !strings.ContainsFunc(sent, unicode.IsSpace) {
			ready := s.pending
			s.pending = ""
			return s.deliver(ready)
		}
		return nil
	}
	_, size := utf8.DecodeRuneInString(s.pending[i:])
	ready := s.pending[:i+size]
	s.pending = s.pending[i+size:]
	return s.deliver(ready)
}

// deliver hands frag to onToken and records it; the caller holds mu.
func (s *sink) deliver(frag string) error {
	if frag == "" {
		return nil
	}
	if err := s.onToken(frag); err != nil {
		s.abort = err
		return err
	}
	s.buf.WriteString(frag)
	s.delivered = true
	return nil
}

// flush sends the word held back when the stream ended whole under the cap.
func (s *sink) flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capped || s.abort != nil {
		return
	}
	frag := s.pending
	s.pending = ""
	_ = s.deliver(frag) // an error is kept in abort
}

// streaming reports whether this is a Stream call.
func (s *sink) streaming() bool { return s != nil }

// text returns the fragments delivered so far.
func (s *sink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// wasDelivered reports whether any fragment reached onToken.
func (s *sink) wasDelivered() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered
}

// wasCapped reports whether the cap stopped the stream.
func (s *sink) wasCapped() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capped
}

// abortErr returns the error onToken returned, if any.
func (s *sink) abortErr() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abort
}
