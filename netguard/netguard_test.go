package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

// TestBlocked: every address the security review found getting through,
// the ones that held, and public addresses that must still pass.
func TestBlocked(t *testing.T) {
	blocked := []string{
		// missed before
		"100.100.100.200", "100.64.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::7f00:1",
		"2002:7f00:1::", "2002:a9fe:a9fe::", "::7f00:1", "::ffff:0:7f00:1", "0.1.2.3", "198.18.0.1",
		"240.0.0.1", "255.255.255.255", "192.0.0.170", "fec0::1", "2001::1", "2001:db8::1",
		// held before
		"127.0.0.1", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "169.254.169.254", "0.0.0.0", "::",
		"10.1.2.3", "172.16.0.1", "192.168.1.1", "fd00:ec2::254", "fe80::1%lo", "224.0.0.1", "ff02::1",
	}
	for _, s := range blocked {
		if !Blocked(netip.MustParseAddr(s)) {
			t.Errorf("%s is allowed", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "100.128.0.1"} {
		if Blocked(netip.MustParseAddr(s)) {
			t.Errorf("%s is blocked", s)
		}
	}
}

// TestControlAndLiterals: the dial hook refuses by address, and URLs whose
// host is a blocked literal are caught when given.
func TestControlAndLiterals(t *testing.T) {
	if err := Control("tcp", "[64:ff9b::a9fe:a9fe]:80", nil); !errors.Is(err, ErrBlocked) {
		t.Errorf("NAT64 metadata: %v", err)
	}
	if err := Control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("public address: %v", err)
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "a.localhost": true,
		"100.100.100.200": true, "hooks.example.com": false, "93.184.216.34": false} {
		if got := LiteralBlocked(host); got != want {
			t.Errorf("LiteralBlocked(%q) = %v, want %v", host, got, want)
		}
	}
}
