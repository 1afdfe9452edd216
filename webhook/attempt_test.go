package webhook

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/agentd/agentd/netguard"
)

// TestAttemptErrorKeepsTheNetworkPrivate: lastError says what went wrong
// without the resolver's or dialer's text (server names, addresses).
func TestAttemptErrorKeepsTheNetworkPrivate(t *testing.T) {
	for _, err := range []error{
		&net.DNSError{Err: "no such host", Name: "hooks.internal", Server: "10.0.0.2:53", IsNotFound: true},
		fmt.Errorf("dial: %w: 10.0.0.7", netguard.ErrBlocked),
		&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 80}, Err: fmt.Errorf("unreachable")},
	} {
		got := attemptError(err)
		if strings.Contains(got, "10.0.0") || strings.Contains(got, "internal") && !strings.Contains(got, "internal address") {
			t.Errorf("%v: lastError %q tells the network", err, got)
		}
	}
}
