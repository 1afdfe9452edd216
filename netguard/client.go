package netguard

import (
	"net"
	"net/http"
	"time"
)

// NewClient returns the HTTP client every connection to a URL given through
// the API goes through (webhook deliveries, action handlers, MCP servers):
// no proxy (the guard must see the receiver's address), no redirects
// followed, timeout per request, and unless allowPrivate the dial-time
// address guard.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = Control
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			TLSHandshakeTimeout: timeout,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
