package netguard

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// Reason says in fixed words why a request to who ("the receiver", "the
// handler", "the MCP server") got no answer. It never quotes err: the
// dialer's and the resolver's own text name the addresses a host name
// resolved to and the resolver itself, which would let whoever chose the
// URL map the service's network.
func Reason(err error, who string) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrBlocked):
		return who + "'s address is not allowed (loopback, private or other internal address)"
	case errors.As(err, &dnsErr):
		return who + "'s host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return who + " refused the connection"
	case errors.As(err, &netErr) && netErr.Timeout():
		return who + " did not answer in time"
	case errors.As(err, new(*tls.CertificateVerificationError)), errors.As(err, new(tls.RecordHeaderError)),
		errors.As(err, new(tls.AlertError)):
		return "the TLS handshake with " + who + " failed"
	}
	return who + " could not be reached"
}
