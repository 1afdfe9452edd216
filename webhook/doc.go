// Package webhook delivers the events the store's outbox holds. The store
// writes each event, with one pending delivery per webhook that subscribes
// to it, in the transaction of the change it reports (a saved exchange, an
// agent's update, ...), and after the commit wakes this process's workers
// (Queue.WakeWorkers).
//
// A Dispatcher (worker.go) claims due deliveries under a lease, so that no
// other worker or replica sends them meanwhile, POSTs each one signed per
// Standard Webhooks (package signature: Sign, and Verify for receivers)
// through a client whose dialer refuses internal addresses
// (netguard.Control), and records every attempt with its next retry
// (DefaultRetries, or the receiver's Retry-After). Without a wake-up it
// polls, for retries that come due and for events other replicas queued.
//
// It depends on the store's outbox through the small Queue interface and
// never imports server/ or gen/; cmd/agentd starts the Dispatcher and stops
// it before the database closes.
package webhook
