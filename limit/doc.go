// Package limit implements agentd's request limits: fixed-window rate
// counters and per-key concurrency semaphores, each in a process-local
// (memory) and a shared (Redis) flavour.
//
// Counters count requests in fixed windows of [Window] (one minute) with
// github.com/ulule/limiter/v3, whose stores take the rate on every call, so
// the limit of a key may change between requests (for example when an
// account's tier changes); the latest limit is honoured. Windows are aligned
// to Unix time (a one-minute window starts on a whole minute), so every
// replica and every key agree on when a window ends and [Result.Reset] is
// exact. [Check] applies several rules (an endpoint limit and an account
// limit) to one request and returns the binding result.
//
// Semaphores cap concurrent holders of a key. The Redis semaphore is a
// lease-based sorted set timed with Redis TIME, so a replica that crashes
// while holding a slot leaks it for at most one lease; it never uses plain
// INCR/DECR counters.
//
// [FailOpenCounter] and [FailOpenSemaphore] admit requests when the backend
// fails, logging (throttled) and counting the failures in
// agentd_limit_backend_errors_total.
//
// The package knows nothing of HTTP; the server's middleware maps results to
// X-RateLimit-* headers and 429 responses.
package limit
