package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// seedHistory stores exchanges (two messages each) for agentID spread
// evenly over the days before end, as SaveExchange would store them:
// messages and the hourly rollups they produce. It writes the rows in
// batches, since a million SaveExchange calls would take minutes.
func seedHistory(b *testing.B, s *Store, agentID string, exchanges int, end time.Time, days int) {
	b.Helper()
	const users, rooms = 5000, 20000
	span := time.Duration(days) * 24 * time.Hour
	step := span / time.Duration(exchanges)
	stats := map[time.Time]*hourStatsRow{}
	latency := map[[2]int64]int64{}
	type hourSketches struct{ users, convs sketch }
	sketches := map[time.Time]*hourSketches{}
	convs := make([]conversationRow, rooms)
	for i := range convs {
		convs[i] = conversationRow{ID: ctext(fmt.Sprintf("conv_seed%06d", i)), AgentID: ctext(agentID),
			Key: ctext(fmt.Sprintf("room:r%d", i)), Kind: string(domain.KindRoom), RoomID: fmt.Sprintf("r%d", i),
			Platform: domain.PlatformAPI, CreatedAt: end.Add(-span), LastMessageAt: end}
	}
	err := s.w.Transaction(func(tx *gorm.DB) error {
		if err := tx.CreateInBatches(convs, 1000).Error; err != nil {
			return err
		}
		batch := make([]messageRow, 0, 2000)
		for i := 0; i < exchanges; i++ {
			at := end.Add(-span + time.Duration(i)*step).Truncate(time.Millisecond)
			h := hourOf(at)
			user, conv := "u"+strconv.Itoa(i%users), convs[i%rooms].ID
			ms := float64(50 + (i*7919)%2000)
			batch = append(batch,
				messageRow{ID: ctext(fmt.Sprintf("msg_seed%09du", i)), ConversationID: conv, Role: string(domain.RoleUser), UserID: user, Text: "question", CreatedAt: at},
				messageRow{ID: ctext(fmt.Sprintf("msg_seed%09da", i)), ConversationID: conv, Role: string(domain.RoleAssistant), UserID: user,
					Text: "answer", TokensUsed: 120, ResponseMillis: ms, CreatedAt: at.Add(time.Millisecond)})
			if len(batch) == cap(batch) {
				if err := tx.CreateInBatches(batch, 500).Error; err != nil {
					return err
				}
				batch = batch[:0]
			}
			st := stats[h]
			if st == nil {
				st = &hourStatsRow{AgentID: ctext(agentID), Hour: h}
				stats[h] = st
			}
			st.Messages += 2
			st.TokensUsed += 120
			st.Replies++
			st.ResponseMillis += ms
			latency[[2]int64{h.Unix(), int64(latencyBucket(ms))}]++
			sk := sketches[h]
			if sk == nil {
				sk = &hourSketches{}
				sketches[h] = sk
			}
			sk.users.add(user)
			sk.convs.add(string(conv))
		}
		if err := tx.CreateInBatches(batch, 500).Error; err != nil {
			return err
		}
		var statRows []hourStatsRow
		for _, st := range stats {
			statRows = append(statRows, *st)
		}
		var latRows []hourLatencyRow
		for k, n := range latency {
			latRows = append(latRows, hourLatencyRow{AgentID: ctext(agentID), Hour: time.Unix(k[0], 0).UTC(), Bucket: int(k[1]), Count: n})
		}
		var sketchRows []hourSketchRow
		for h, sk := range sketches {
			sketchRows = append(sketchRows, hourSketchRow{AgentID: ctext(agentID), Hour: h, Users: sk.users.encode(), Conversations: sk.convs.encode()})
		}
		for _, rows := range []any{statRows, latRows, sketchRows} {
			if err := tx.CreateInBatches(rows, 500).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
}

// BenchmarkAgentAnalytics7Days1MMessages reports a week of hourly
// analytics for an agent with 1,000,000 stored messages on SQLite (the
// target is 50 ms at p50). AGENTD_BENCH_MESSAGES changes the number.
func BenchmarkAgentAnalytics7Days1MMessages(b *testing.B) {
	messages := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("AGENTD_BENCH_MESSAGES")); err == nil && n > 0 {
		messages = n
	}
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	a := mustAgent(b, s, acct.ID, "busy")
	end := time.Now().UTC().Truncate(time.Hour)
	seedHistory(b, s, a.ID, messages/2, end, 7)
	q := domain.AnalyticsQuery{From: end.Add(-7*24*time.Hour + time.Minute), To: end.Add(-time.Minute), Interval: domain.IntervalHour}
	b.ResetTimer()
	for b.Loop() {
		rep, err := s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, q)
		if err != nil || rep.Totals.Messages == 0 || rep.Totals.Users < 4900 || rep.Totals.Users > 5100 {
			b.Fatalf("%+v %v", rep.Totals, err)
		}
	}
}
