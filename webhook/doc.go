// Package webhook delivers the events the store's outbox holds: workers
// claim due deliveries, POST them signed per Standard Webhooks through a
// client that refuses private addresses at dial time, and record every
// attempt with its retry. It depends on the store's outbox through the
// small Queue interface and never imports server/ or gen/.
package webhook
