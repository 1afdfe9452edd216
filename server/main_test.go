package server

import (
	"testing"

	"github.com/agentd/agentd/store/storetest"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: a stream
// whose client went away must not keep its provider call, pinger or
// concurrency slot alive.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the HTTP clients, not leaks. An
		// idle readLoop waits in internal/poll.runtime_pollWait, which must
		// not be ignored as such: a stream write blocked on a client that
		// stopped reading waits there too.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		storetest.IgnoreStatementCache,
	)
}
