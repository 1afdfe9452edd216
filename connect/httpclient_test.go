package connect_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
)

// TestHTTPClientBoundsAStalledCall: a server that accepts the request and
// never answers fails the call at the header timeout instead of holding
// it for good.
func TestHTTPClientBoundsAStalledCall(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	c := connect.HTTPClient(200 * time.Millisecond)
	defer c.CloseIdleConnections()
	start := time.Now()
	_, err := c.Get(srv.URL)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %s", took)
	}
}
