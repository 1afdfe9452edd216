package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress means a webhook URL resolved to an address deliveries
// may not reach (loopback, private, link-local, multicast, unspecified).
var ErrBlockedAddress = errors.New("webhook: address not allowed")

// refusePrivate is a net.Dialer Control hook: it runs on the address about
// to be connected, after DNS resolution, so a name that resolves (or
// rebinds) to an internal address is refused whatever it resolved to when
// the webhook was created.
func refusePrivate(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || blocked(ip.Unmap()) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	return nil
}

// blocked reports whether ip is internal to the host or its network.
func blocked(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()
}
