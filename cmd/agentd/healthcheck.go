package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthcheckTimeout bounds the whole check: a container engine runs it
// every interval and counts a hung check as a failure anyway.
const healthcheckTimeout = 3 * time.Second

// healthcheckCommand asks a running agentd for /healthz. The container
// image has no shell, curl or wget (nothing but the binary), so its
// HEALTHCHECK runs the binary itself.
var healthcheckCommand = &command{
	name:    "healthcheck",
	summary: "exit 0 if the agentd on this host answers /healthz",
	details: `Sends GET /healthz to the agentd listening on --addr (AGENTD_ADDR, the
address 'agentd serve' listens on, so the same environment serves both) and
exits 0 on 200 OK, 1 otherwise. An address without a host, or with 0.0.0.0
or ::, is asked on 127.0.0.1. It is the HEALTHCHECK of the container image,
which has no curl; Kubernetes probes /healthz and /readyz over HTTP instead.

Examples:
  agentd healthcheck
  agentd healthcheck --addr 127.0.0.1:8081`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		addr := fs.String("addr", cmpEnv(e.getenv("AGENTD_ADDR"), ":8080"), "listen `address` of the agentd to check")
		return func(ctx context.Context, _ []string) error {
			return healthcheck(ctx, *addr, e.stdout)
		}
	},
}

// cmpEnv returns the trimmed environment value v, or def when it is empty.
func cmpEnv(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

// healthcheck asks the agentd listening on addr for /healthz.
func healthcheck(ctx context.Context, addr string, stdout io.Writer) error {
	target, err := healthzURL(addr)
	if err != nil {
		return usagef("healthcheck", "--addr: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", target, res.Status)
	}
	fmt.Fprintf(stdout, "%s: %s\n", target, res.Status)
	return nil
}

// healthzURL is the /healthz URL of a server listening on addr, asked on
// loopback when addr names no host or every host.
func healthzURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not an address such as :8080 or 127.0.0.1:8080", addr)
	}
	if port == "" || port == "0" {
		return "", errors.New("needs the port agentd listens on, not 0")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
