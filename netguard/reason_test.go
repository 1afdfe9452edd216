package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReasonKeepsTheNetworkPrivate: each failure gets its fixed words, and
// none names an address, a resolver or the dialer's text.
func TestReasonKeepsTheNetworkPrivate(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	_, refusedErr := http.Get(refused.URL)
	blocked := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: Control}).DialContext}}
	_, blockedErr := blocked.Get("http://127.0.0.1:9/")
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsServer.Close()
	_, tlsErr := http.Get(tlsServer.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tlsServer.URL, nil)
	_, timeoutErr := (&http.Client{Timeout: time.Nanosecond}).Do(req)

	for _, tt := range []struct {
		err  error
		want string
	}{
		{&net.DNSError{Err: "no such host", Name: "hooks.internal", Server: "10.0.0.2:53", IsNotFound: true},
			"the receiver's host name could not be resolved"},
		{fmt.Errorf("dial: %w: 10.0.0.7", ErrBlocked),
			"the receiver's address is not allowed (loopback, private or other internal address)"},
		{blockedErr, "the receiver's address is not allowed (loopback, private or other internal address)"},
		{refusedErr, "the receiver refused the connection"},
		{tlsErr, "the TLS handshake with the receiver failed"},
		{timeoutErr, "the receiver did not answer in time"},
		{&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 80}, Err: fmt.Errorf("unreachable")},
			"the receiver could not be reached"},
	} {
		got := Reason(tt.err, "the receiver")
		if got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
		if strings.Contains(got, "10.0.0") || strings.Contains(got, "127.0.0.1") {
			t.Errorf("Reason(%v) = %q names an address", tt.err, got)
		}
	}
}
