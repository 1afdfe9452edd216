package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheckAsksTheRunningServer(t *testing.T) {
	in := boot(t, nil, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	addr := strings.TrimPrefix(in.base, "http://")
	var out, errOut bytes.Buffer
	// The address comes from AGENTD_ADDR, as in the image.
	err := runEnv(context.Background(), []string{"healthcheck"}, mapEnv(map[string]string{"AGENTD_ADDR": addr}), &out, &errOut)
	if err != nil || exitCode(err) != exitOK {
		t.Fatalf("healthcheck of a running agentd: %v (stderr %q)", err, errOut.String())
	}
	if want := "http://" + addr + "/healthz: 200 OK"; !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}

	// Stopped, it fails with exit code 1.
	in.stop(t)
	err = runEnv(context.Background(), []string{"healthcheck", "--addr", addr}, mapEnv(nil), &out, &errOut)
	if exitCode(err) != exitError {
		t.Errorf("healthcheck of a stopped agentd: %v, exit %d, want 1", err, exitCode(err))
	}
}

func TestHealthcheckFailsOnAnUnhealthyAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			t.Errorf("asked %s", r.URL.Path)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := runEnv(context.Background(), []string{"healthcheck", "--addr", strings.TrimPrefix(srv.URL, "http://")}, mapEnv(nil), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "503") || exitCode(err) != exitError {
		t.Errorf("healthcheck of a 503: %v, exit %d", err, exitCode(err))
	}
}

func TestHealthzURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/healthz",
		"[::]:8080":      "http://127.0.0.1:8080/healthz",
		"10.1.2.3:9000":  "http://10.1.2.3:9000/healthz",
		"[::1]:8080":     "http://[::1]:8080/healthz",
		"localhost:8081": "http://localhost:8081/healthz",
	} {
		got, err := healthzURL(addr)
		if err != nil || got != want {
			t.Errorf("healthzURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"8080", ":0", "127.0.0.1:"} {
		if _, err := healthzURL(addr); err == nil {
			t.Errorf("healthzURL(%q) accepted", addr)
		}
	}
	var ue *usageError
	err := runEnv(context.Background(), []string{"healthcheck", "--addr", "nonsense"}, mapEnv(nil), &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.As(err, &ue) {
		t.Errorf("bad --addr: %v, want a usage error", err)
	}
}
