package llm

import "time"

// SetRetryBackoff replaces the pauses between retries and returns a
// function restoring them; tests use short pauses to stay fast.
func SetRetryBackoff(d ...time.Duration) (restore func()) {
	old := retryBackoff
	retryBackoff = d
	return func() { retryBackoff = old }
}
