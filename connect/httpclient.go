package connect

import (
	"net"
	"net/http"
	"time"
)

// CallTimeout bounds one call to a platform's API that is not a long
// poll: a stalled connection behind a proxy must not hold a chat's queue,
// or a polling loop, for good.
const CallTimeout = 30 * time.Second

// HTTPClient is the HTTP client of a platform's API: dialing, the TLS
// handshake and the wait for response headers are bounded (headerTimeout
// must exceed the platform's long poll), and idle connections are kept
// per host for the many bots of one replica (http.DefaultTransport keeps
// 2, so every other call would dial and handshake again).
func HTTPClient(headerTimeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: headerTimeout,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}}
}
