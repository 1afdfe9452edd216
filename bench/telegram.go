package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/agentd/agentd/connect/telegram/telegramtest"
)

// The bench's bots: bot i has id botID(i), token botToken(i) and a
// username; the telegram child and the seeding make the same ones.
func botID(i int) int64 { return 7_000_000_000 + int64(i) }
func botToken(i int) string {
	return strconv.FormatInt(botID(i), 10) + ":bench-token-" + strconv.Itoa(i)
}
func botUsername(i int) string { return "bench_" + strconv.Itoa(i) + "_bot" }

// botStats is what the Telegram test server saw: the bots with a
// getUpdates request in flight, and (when asked) the calls of each Bot API
// method so far.
type botStats struct {
	Polling int              `json:"polling"`
	Calls   map[string]int64 `json:"calls,omitempty"`
}

// botServer is a Telegram Bot API test server holding the bench's bots:
// its URL and how to read its stats.
type botServer struct {
	url   string
	stats func(ctx context.Context, calls bool) (botStats, error)
}

// addBots registers bots 0..n-1 on srv.
func addBots(srv *telegramtest.Server, n int) {
	for i := range n {
		srv.AddBot(botToken(i), botID(i), botUsername(i))
	}
}

// statsOf reads the stats of bots 0..n-1 from srv.
func statsOf(srv *telegramtest.Server, n int, calls bool) botStats {
	st := botStats{}
	if calls {
		st.Calls = map[string]int64{}
	}
	for i := range n {
		if srv.Polling(botToken(i)) > 0 {
			st.Polling++
		}
		if calls {
			for _, c := range srv.Calls(botToken(i)) {
				st.Calls[c.Method]++
			}
		}
	}
	return st
}

// childTB lets telegramtest.New run outside a test: the server lives as
// long as the child process, so its cleanup is dropped. Any other method
// of testing.TB would panic; New calls none.
type childTB struct{ testing.TB }

func (childTB) Cleanup(func()) {}
func (childTB) Helper()        {}

// serveTelegram is the telegram child: a telegramtest server holding bots
// bots, served on addr with its stats at /bench/stats (?calls=1 adds the
// calls by method). It runs in its own process so that the 10,000 held
// polls' sockets count against its own file limit, not the replicas'.
func serveTelegram(ctx context.Context, addr string, bots int) error {
	srv := telegramtest.New(childTB{})
	defer srv.Close()
	addBots(srv, bots)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /bench/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(statsOf(srv, bots, r.URL.Query().Get("calls") != ""))
	})
	mux.Handle("/", srv.Config.Handler)
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", l.Addr())
	serveOn(ctx, l, mux)
	<-ctx.Done()
	return nil
}

// telegramChild is the botServer of a running telegram child at base.
func telegramChild(base string) botServer {
	return botServer{url: base, stats: func(ctx context.Context, calls bool) (botStats, error) {
		url := base + "/bench/stats"
		if calls {
			url += "?calls=1"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return botStats{}, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return botStats{}, err
		}
		defer res.Body.Close()
		var st botStats
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != http.StatusOK {
			return botStats{}, fmt.Errorf("telegram stats: status %d: %v", res.StatusCode, err)
		}
		return st, nil
	}}
}
