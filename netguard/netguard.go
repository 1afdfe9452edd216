// Package netguard keeps connections to URLs given through the API
// (webhooks now; action handlers and MCP servers use the same guard) away
// from the host and its networks: it refuses every address the IANA
// special-purpose registries say is not globally reachable, and the
// addresses that embed one (NAT64, 6to4, IPv4-mapped and -compatible).
// The check runs on the address about to be dialled, after DNS, so a name
// that resolves or rebinds to an internal address is refused whatever it
// resolved to when it was given.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// ErrBlocked means an address is not one the service may connect to.
var ErrBlocked = errors.New("address not allowed")

// blockedPrefixes are the special-purpose blocks that are not globally
// reachable (RFC 6890 and the IANA IPv4 and IPv6 special-purpose address
// registries), plus multicast and the deprecated site-local block.
var blockedPrefixes = mustPrefixes(
	// IPv4
	"0.0.0.0/8",          // this network
	"10.0.0.0/8",         // private
	"100.64.0.0/10",      // shared address space (CGNAT, cloud metadata such as 100.100.100.200)
	"127.0.0.0/8",        // loopback
	"169.254.0.0/16",     // link-local (cloud metadata 169.254.169.254)
	"172.16.0.0/12",      // private
	"192.0.0.0/24",       // IETF protocol assignments
	"192.0.2.0/24",       // documentation
	"192.88.99.0/24",     // 6to4 relay anycast (deprecated)
	"192.168.0.0/16",     // private
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // documentation
	"203.0.113.0/24",     // documentation
	"224.0.0.0/4",        // multicast
	"240.0.0.0/4",        // reserved
	"255.255.255.255/32", // limited broadcast
	// IPv6
	"::/128",          // unspecified
	"::1/128",         // loopback
	"::/96",           // IPv4-compatible (deprecated)
	"::ffff:0:0/96",   // IPv4-mapped (checked unmapped first; kept for safety)
	"::ffff:0:0:0/96", // IPv4-translated (SIIT)
	"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
	"100::/64",        // discard-only
	"2001::/23",       // IETF protocol assignments (Teredo, benchmarking, ORCHID)
	"2001:db8::/32",   // documentation
	"3fff::/20",       // documentation
	"5f00::/16",       // segment routing SIDs
	"fc00::/7",        // unique local
	"fe80::/10",       // link-local
	"fec0::/10",       // site-local (deprecated)
	"ff00::/8",        // multicast
)

// Translation prefixes whose addresses carry an IPv4 address that decides.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// Blocked reports whether ip is one the service must not connect to.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return true
	}
	if v4, ok := embeddedIPv4(ip); ok {
		return Blocked(v4)
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddedIPv4 is the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address stands for.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case ip.Is4():
		return netip.Addr{}, false
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// Control is a net.Dialer Control hook that refuses blocked addresses.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || Blocked(ip) {
		return fmt.Errorf("%w: %s", ErrBlocked, host)
	}
	return nil
}

// LiteralBlocked reports whether host (a URL's host, without port) is an
// IP address the guard refuses, or a name that only ever means the local
// host, so such a URL can be refused when it is given instead of failing
// at every delivery. Other names are checked when dialled.
func LiteralBlocked(host string) bool {
	if host == "localhost" || len(host) > len(".localhost") && host[len(host)-len(".localhost"):] == ".localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && Blocked(ip)
}

// CheckURL returns why raw cannot be an outbound URL, "" when it can: it
// must be an absolute http or https URL with a host and no credentials,
// and unless allowPrivate its host must not be a blocked literal address
// (names are checked when dialled).
func CheckURL(raw string, allowPrivate bool) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs():
		return "must be an absolute http or https URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must use http or https"
	case u.Hostname() == "":
		return "must name a host"
	case u.User != nil:
		return "must not carry credentials"
	case !allowPrivate && LiteralBlocked(u.Hostname()):
		return "must not point to a loopback, private, link-local or other internal address"
	}
	return ""
}
