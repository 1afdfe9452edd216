package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"
)

// errCapReached stops the provider call once the reply reached its cap.
var errCapReached = errors.New("llm: reply reached its length cap")

// sink receives the fragments langchaingo streams, enforces the length cap
// and hands them on. The anthropic client calls it from its own reader
// goroutine, so its state is guarded.
type sink struct {
	onToken func(string) error
	max     int
	kick    func()

	mu        sync.Mutex
	buf       strings.Builder
	runes     int
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
	frag := string(chunk)
	if left := s.max - s.runes; s.max > 0 && utf8.RuneCountInString(frag) >= left {
		frag, s.capped = firstRunes(frag, left), true
	}
	if frag != "" {
		if err := s.onToken(frag); err != nil {
			s.abort = err
			return err
		}
		s.buf.WriteString(frag)
		s.runes += utf8.RuneCountInString(frag)
		s.delivered = true
	}
	if s.capped {
		return errCapReached
	}
	return nil
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

// truncate cuts s to at most n runes; n <= 0 means no cap.
func truncate(s string, n int) string {
	if n <= 0 {
		return s
	}
	return firstRunes(s, n)
}

// firstRunes returns the first n runes of s ("" for n <= 0).
func firstRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
