package domain

import "time"

// Interval is the width of an analytics bucket.
type Interval string

// The analytics intervals.
const (
	IntervalHour Interval = "hour"
	IntervalDay  Interval = "day"
)

// AnalyticsQuery selects a report: the buckets of Interval from the one
// that contains From to the one that contains To.
type AnalyticsQuery struct {
	From, To time.Time
	Interval Interval
}

// ResponseTimes summarises reply times in ms.
type ResponseTimes struct {
	Avg, P50, P95 float64
}

// AnalyticsTotals are a report's figures over its whole range.
type AnalyticsTotals struct {
	Messages, Conversations, Users, TokensUsed, Errors int64
	ToolCalls, ToolErrors, MemoriesSaved               int64
	InputTokens, OutputTokens                          int64
	CostMicros                                         int64 // millionths of a US dollar
	ResponseTime                                       ResponseTimes
}

// AnalyticsBucket is one bucket of a report's series.
type AnalyticsBucket struct {
	Start                                   time.Time
	Messages, TokensUsed, Errors, ToolCalls int64
	CostMicros                              int64 // millionths of a US dollar
	P50ResponseTime                         float64
}

// Analytics is a report over the buckets of a range.
type Analytics struct {
	Totals AnalyticsTotals
	Series []AnalyticsBucket
}

// Spend is what was spent in the windows budgets count, as of a moment:
// the current UTC calendar day and month, in millionths of a US dollar,
// with when each window ends.
type Spend struct {
	DayMicros, MonthMicros     int64
	DayResetsAt, MonthResetsAt time.Time
}
