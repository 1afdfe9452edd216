package store

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Analytics are kept as rollups per agent and UTC hour, updated in the
// transaction of each exchange, so a report reads a few rows per hour of
// its range, whatever the number of stored messages.

// hourStatsRow sums an agent's hour: messages (both sides), tokens, replies
// timed and their total time, turns that ended in a provider failure, tool
// calls and memories saved (by the model or the API).
type hourStatsRow struct {
	AgentID        ctext     `gorm:"primaryKey"`
	Hour           time.Time `gorm:"primaryKey;autoCreateTime:false"`
	Messages       int64     `gorm:"not null"`
	TokensUsed     int64     `gorm:"not null"`
	Replies        int64     `gorm:"not null"`
	ResponseMillis float64   `gorm:"not null"`
	Errors         int64     `gorm:"not null"`
	ToolCalls      int64     `gorm:"not null;default:0"`
	ToolErrors     int64     `gorm:"not null;default:0"`
	MemoriesSaved  int64     `gorm:"not null;default:0"`
	InputTokens    int64     `gorm:"not null;default:0"`
	OutputTokens   int64     `gorm:"not null;default:0"`
	CostMicros     int64     `gorm:"not null;default:0"`
}

// TableName names the table.
func (hourStatsRow) TableName() string { return "agent_hour_stats" }

// hourLatencyRow counts an hour's replies per response-time bucket (see
// latencyBucket).
type hourLatencyRow struct {
	AgentID ctext     `gorm:"primaryKey"`
	Hour    time.Time `gorm:"primaryKey;autoCreateTime:false"`
	Bucket  int       `gorm:"primaryKey;autoIncrement:false"`
	Count   int64     `gorm:"not null"`
}

// TableName names the table.
func (hourLatencyRow) TableName() string { return "agent_hour_latency" }

// hourSketchRow holds an hour's distinct users and conversations as
// HyperLogLog sketches (see sketch); a range's distinct counts merge them.
type hourSketchRow struct {
	AgentID       ctext     `gorm:"primaryKey"`
	Hour          time.Time `gorm:"primaryKey;autoCreateTime:false"`
	Users         []byte    `gorm:"not null"`
	Conversations []byte    `gorm:"not null"`
}

// TableName names the table.
func (hourSketchRow) TableName() string { return "agent_hour_sketches" }

// hourErrorRow counts an hour's failed turns per kind of provider failure.
type hourErrorRow struct {
	AgentID ctext     `gorm:"primaryKey"`
	Hour    time.Time `gorm:"primaryKey;autoCreateTime:false"`
	Kind    string    `gorm:"primaryKey"`
	Count   int64     `gorm:"not null"`
}

// TableName names the table.
func (hourErrorRow) TableName() string { return "agent_hour_errors" }

// analyticsModels are the rollup tables.
func analyticsModels() []any {
	return []any{&hourStatsRow{}, &hourLatencyRow{}, &hourSketchRow{}, &hourErrorRow{}}
}

// latencyGrowth is the ratio between the bounds of consecutive response-time
// buckets: bucket b holds times in (latencyGrowth^(b-1), latencyGrowth^b]
// ms, bucket 0 times up to 1 ms. A percentile is reported as the geometric
// middle of its bucket, so it is within ±10% of the true value.
const latencyGrowth = 1.2

// latencyBucket is the bucket of a response time in ms.
func latencyBucket(ms float64) int {
	if ms <= 1 {
		return 0
	}
	return int(math.Ceil(math.Log(ms) / math.Log(latencyGrowth)))
}

// bucketValue is the value a percentile falling in bucket b reports.
func bucketValue(b int) float64 {
	if b == 0 {
		return 1
	}
	return math.Pow(latencyGrowth, float64(b)-0.5)
}

// hourOf is the UTC hour that contains t.
func hourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// recordExchange adds an exchange to the agent's hourly rollups: each
// message in the hour it was written, the reply's tokens and time in its
// own, the user and the conversation as active.
func recordExchange(tx *gorm.DB, agentID string, convID ctext, user, reply domain.Message) error {
	id := ctext(agentID)
	uh, rh := hourOf(user.CreatedAt), hourOf(reply.CreatedAt)
	rows := []hourStatsRow{{AgentID: id, Hour: rh, Messages: 1, TokensUsed: int64(reply.TokensUsed),
		InputTokens: int64(reply.PromptTokens), OutputTokens: int64(reply.CompletionTokens), CostMicros: reply.CostMicros,
		Replies: 1, ResponseMillis: reply.ResponseMillis,
		ToolCalls: int64(len(reply.ToolCalls)), ToolErrors: int64(toolErrors(reply.ToolCalls))}}
	if uh.Equal(rh) {
		rows[0].Messages++
	} else {
		rows = append(rows, hourStatsRow{AgentID: id, Hour: uh, Messages: 1})
	}
	for _, r := range rows {
		if err := addHourStats(tx, r); err != nil {
			return err
		}
	}
	if err := tx.Exec(addLatencySQL, id, rh, latencyBucket(reply.ResponseMillis)).Error; err != nil {
		return err
	}
	if err := addToSketches(tx, id, uh, user.UserID, string(convID)); err != nil {
		return err
	}
	if convID == "" || uh.Equal(rh) {
		return nil
	}
	return addToSketches(tx, id, rh, "", string(convID))
}

// addToSketches counts a user and a conversation ("" for none) as active in
// an hour. The exchange's transaction holds the agent's row, so the read
// and the write of the hour's sketches cannot interleave with another's.
func addToSketches(tx *gorm.DB, agentID ctext, hour time.Time, user, conv string) error {
	if user == "" && conv == "" {
		return nil
	}
	var row hourSketchRow
	res := tx.Raw("SELECT users, conversations FROM agent_hour_sketches WHERE agent_id = ? AND hour = ?", agentID, hour).Scan(&row)
	if res.Error != nil {
		return res.Error
	}
	fresh := res.RowsAffected == 0
	users, convs := decodeSketch(row.Users), decodeSketch(row.Conversations)
	changed := user != "" && users.add(user)
	if conv != "" && convs.add(conv) {
		changed = true
	}
	if !changed && !fresh {
		return nil
	}
	return tx.Exec(putSketchesSQL, agentID, hour, users.encode(), convs.encode()).Error
}

// The statements of an exchange's analytics, written out as the
// exchange's messages are (see insertExchangeSQL).
const (
	// addHourStatsSQL adds an hour's figures (agent, hour, then the
	// figures in hourStatsRow's order) to its row.
	addHourStatsSQL = `INSERT INTO agent_hour_stats (agent_id, hour, messages, tokens_used, replies, response_millis, errors,
		tool_calls, tool_errors, memories_saved, input_tokens, output_tokens, cost_micros) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent_id, hour) DO UPDATE SET messages = agent_hour_stats.messages + excluded.messages,
		tokens_used = agent_hour_stats.tokens_used + excluded.tokens_used, replies = agent_hour_stats.replies + excluded.replies,
		response_millis = agent_hour_stats.response_millis + excluded.response_millis, errors = agent_hour_stats.errors + excluded.errors,
		tool_calls = agent_hour_stats.tool_calls + excluded.tool_calls, tool_errors = agent_hour_stats.tool_errors + excluded.tool_errors,
		memories_saved = agent_hour_stats.memories_saved + excluded.memories_saved,
		input_tokens = agent_hour_stats.input_tokens + excluded.input_tokens,
		output_tokens = agent_hour_stats.output_tokens + excluded.output_tokens,
		cost_micros = agent_hour_stats.cost_micros + excluded.cost_micros`
	// addLatencySQL counts a reply in its hour's latency bucket.
	addLatencySQL = `INSERT INTO agent_hour_latency (agent_id, hour, bucket, count) VALUES (?, ?, ?, 1)
		ON CONFLICT (agent_id, hour, bucket) DO UPDATE SET count = agent_hour_latency.count + 1`
	// putSketchesSQL stores an hour's sketches of users and conversations.
	putSketchesSQL = `INSERT INTO agent_hour_sketches (agent_id, hour, users, conversations) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent_id, hour) DO UPDATE SET users = excluded.users, conversations = excluded.conversations`
)

// addHourStats adds r's figures to its hour's row.
func addHourStats(tx *gorm.DB, r hourStatsRow) error {
	return tx.Exec(addHourStatsSQL, r.AgentID, r.Hour, r.Messages, r.TokensUsed, r.Replies, r.ResponseMillis, r.Errors,
		r.ToolCalls, r.ToolErrors, r.MemoriesSaved, r.InputTokens, r.OutputTokens, r.CostMicros).Error
}

// addOnConflict is an upsert that adds the inserted values of columns to
// the stored ones (qualified by table: PostgreSQL finds a bare name
// ambiguous).
func addOnConflict(keys []string, table string, columns ...string) clause.OnConflict {
	set := make(map[string]any, len(columns))
	for _, c := range columns {
		set[c] = gorm.Expr(table + "." + c + " + excluded." + c)
	}
	cols := make([]clause.Column, len(keys))
	for i, k := range keys {
		cols[i] = clause.Column{Name: k}
	}
	return clause.OnConflict{Columns: cols, DoUpdates: clause.Assignments(set)}
}

// RecordTurnError counts a turn of agent agentID of account accountID that
// ended in a provider failure of kind at t (one per turn, not per retry).
// It returns ErrNotFound for a missing agent or one of another account.
func (s Analytics) RecordTurnError(ctx context.Context, accountID, agentID, kind string, t time.Time) error {
	return s.write(ctx, "record turn error", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		h := hourOf(t)
		if err := addHourStats(tx, hourStatsRow{AgentID: ctext(agentID), Hour: h, Errors: 1}); err != nil {
			return err
		}
		e := hourErrorRow{AgentID: ctext(agentID), Hour: h, Kind: kind, Count: 1}
		return tx.Clauses(addOnConflict([]string{"agent_id", "hour", "kind"}, "agent_hour_errors", "count")).Create(&e).Error
	})
}

// RecordTokens adds tokens the agent spent outside a turn (a conversation's
// summary) to its hour at t. It returns ErrNotFound for a missing agent or
// one of another account.
func (s Analytics) RecordTokens(ctx context.Context, accountID, agentID string, tokens int, t time.Time) error {
	return s.write(ctx, "record tokens", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		return addHourStats(tx, hourStatsRow{AgentID: ctext(agentID), Hour: hourOf(t), TokensUsed: int64(tokens)})
	})
}

// bucketStart is the start of the bucket of interval that contains t.
func bucketStart(t time.Time, interval domain.Interval) time.Time {
	t = t.UTC()
	if interval == domain.IntervalDay {
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return t.Truncate(time.Hour)
}

// next is the start of the bucket after the one starting at t.
func next(t time.Time, interval domain.Interval) time.Time {
	if interval == domain.IntervalDay {
		return t.AddDate(0, 0, 1)
	}
	return t.Add(time.Hour)
}

// AgentAnalytics reports on agent agentID of account accountID over q,
// from the hourly rollups. Every bucket of the range is in Series, empty
// ones with zeros. It returns ErrNotFound for a missing agent or one of
// another account, ErrInvalid for an unknown interval or To before From.
func (s Analytics) AgentAnalytics(ctx context.Context, accountID, agentID string, q domain.AnalyticsQuery) (domain.Analytics, error) {
	if q.Interval != domain.IntervalHour && q.Interval != domain.IntervalDay {
		return domain.Analytics{}, wrap("analytics", invalidf("unknown interval %q", q.Interval))
	}
	if q.To.Before(q.From) {
		return domain.Analytics{}, wrap("analytics", invalidf("to is before from"))
	}
	db := s.read(ctx)
	if err := db.Model(&agentRow{}).Select("id").Where("id = ? AND account_id = ?", agentID, accountID).Take(&agentRow{}).Error; err != nil {
		return domain.Analytics{}, wrap("analytics", err)
	}
	start, end := bucketStart(q.From, q.Interval), next(bucketStart(q.To, q.Interval), q.Interval)
	var report domain.Analytics
	series, index := emptySeries(start, end, q.Interval)
	err := sumStats(db, agentID, start, end, q.Interval, series, index, &report.Totals)
	if err == nil {
		err = sumLatency(db, agentID, start, end, q.Interval, series, index, &report.Totals)
	}
	if err == nil {
		err = countDistinct(db, agentID, start, end, &report.Totals)
	}
	if err != nil {
		return domain.Analytics{}, wrap("analytics", err)
	}
	report.Series = series
	return report, nil
}

// emptySeries is one zero bucket per interval in [start, end), and the
// index of each bucket by its start.
func emptySeries(start, end time.Time, interval domain.Interval) ([]domain.AnalyticsBucket, map[time.Time]int) {
	var series []domain.AnalyticsBucket
	index := map[time.Time]int{}
	for t := start; t.Before(end); t = next(t, interval) {
		index[t] = len(series)
		series = append(series, domain.AnalyticsBucket{Start: t})
	}
	return series, index
}

// sumStats adds the hourly figures of [start, end) into the series and the
// totals.
func sumStats(db *gorm.DB, agentID string, start, end time.Time, interval domain.Interval,
	series []domain.AnalyticsBucket, index map[time.Time]int, totals *domain.AnalyticsTotals) error {
	var rows []hourStatsRow
	err := db.Where("agent_id = ? AND hour >= ? AND hour < ?", agentID, start, end).Find(&rows).Error
	if err != nil {
		return err
	}
	var replies int64
	var millis float64
	for _, r := range rows {
		b := &series[index[bucketStart(r.Hour, interval)]]
		b.Messages += r.Messages
		b.TokensUsed += r.TokensUsed
		b.Errors += r.Errors
		b.ToolCalls += r.ToolCalls
		b.CostMicros += r.CostMicros
		totals.ToolCalls += r.ToolCalls
		totals.InputTokens += r.InputTokens
		totals.OutputTokens += r.OutputTokens
		totals.CostMicros += r.CostMicros
		totals.ToolErrors += r.ToolErrors
		totals.MemoriesSaved += r.MemoriesSaved
		totals.Messages += r.Messages
		totals.TokensUsed += r.TokensUsed
		totals.Errors += r.Errors
		replies += r.Replies
		millis += r.ResponseMillis
	}
	if replies > 0 {
		totals.ResponseTime.Avg = millis / float64(replies)
	}
	return nil
}

// sumLatency merges the response-time histograms of [start, end): per
// bucket for its p50, over the range for the totals' p50 and p95.
func sumLatency(db *gorm.DB, agentID string, start, end time.Time, interval domain.Interval,
	series []domain.AnalyticsBucket, index map[time.Time]int, totals *domain.AnalyticsTotals) error {
	var rows []hourLatencyRow
	err := db.Where("agent_id = ? AND hour >= ? AND hour < ?", agentID, start, end).Find(&rows).Error
	if err != nil {
		return err
	}
	all := histogram{}
	per := make([]histogram, len(series))
	for _, r := range rows {
		i := index[bucketStart(r.Hour, interval)]
		if per[i] == nil {
			per[i] = histogram{}
		}
		per[i][r.Bucket] += r.Count
		all[r.Bucket] += r.Count
	}
	for i, h := range per {
		series[i].P50ResponseTime = h.percentile(0.50)
	}
	totals.ResponseTime.P50, totals.ResponseTime.P95 = all.percentile(0.50), all.percentile(0.95)
	return nil
}

// histogram counts replies per latency bucket.
type histogram map[int]int64

// percentile is the value of the bucket holding the p-th reply; 0 when
// empty.
func (h histogram) percentile(p float64) float64 {
	var n int64
	buckets := make([]int, 0, len(h))
	for b, c := range h {
		n += c
		buckets = append(buckets, b)
	}
	if n == 0 {
		return 0
	}
	sort.Ints(buckets)
	rank := int64(math.Ceil(p * float64(n)))
	var seen int64
	for _, b := range buckets {
		if seen += h[b]; seen >= rank {
			return math.Round(bucketValue(b)*100) / 100
		}
	}
	return math.Round(bucketValue(buckets[len(buckets)-1])*100) / 100
}

// countDistinct estimates the distinct users and conversations of
// [start, end) from the hours' sketches.
func countDistinct(db *gorm.DB, agentID string, start, end time.Time, totals *domain.AnalyticsTotals) error {
	var rows []hourSketchRow
	if err := db.Where("agent_id = ? AND hour >= ? AND hour < ?", agentID, start, end).Find(&rows).Error; err != nil {
		return err
	}
	users, convs := &sketch{}, &sketch{}
	for _, r := range rows {
		users.merge(decodeSketch(r.Users))
		convs.merge(decodeSketch(r.Conversations))
	}
	totals.Users, totals.Conversations = users.estimate(), convs.estimate()
	return nil
}
