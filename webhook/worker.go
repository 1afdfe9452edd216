package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/netguard"
	"github.com/agentd/agentd/signature"
	"github.com/agentd/agentd/telemetry"
)

// DefaultRetries is the retry schedule the README's Webhooks section
// documents: the waits after the first, second, ... failed attempt; after
// the last one the delivery is failed.
var DefaultRetries = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour,
}

// errUnreadableSecret fails an attempt whose signing secret does not
// decrypt; nothing is sent unsigned.
var errUnreadableSecret = errors.New("webhook: the signing secret cannot be decrypted: AGENTD_SECRET_KEY is not set or is not the key it was written with")

// maxRetryAfter caps how long a receiver's Retry-After may postpone a retry.
const maxRetryAfter = 24 * time.Hour

// leaseMargin is how long a claim outlives the attempt's timeout, for the
// write of its result.
const leaseMargin = 5 * time.Second

// Queue is the outbox the workers drain; the store's Webhooks face
// implements it (cmd/agentd passes it, so this package needs neither the
// store nor its ORM).
type Queue interface {
	// ClaimDeliveries claims up to n due deliveries for lease.
	ClaimDeliveries(ctx context.Context, n int, lease time.Duration) ([]domain.Job, error)
	// FinishAttempt records an attempt's outcome.
	FinishAttempt(ctx context.Context, job domain.Job, a domain.Attempt) error
	// WakeWorkers is signalled when deliveries were queued.
	WakeWorkers() <-chan struct{}
}

// Config configures the workers.
type Config struct {
	// Retries replaces DefaultRetries when not nil (AGENTD_WEBHOOK_RETRIES);
	// empty means no retry.
	Retries []time.Duration
	// Timeout bounds one attempt (10s).
	Timeout time.Duration
	// AllowPrivate lifts the dial-time guard against internal addresses
	// (AGENTD_WEBHOOK_ALLOW_PRIVATE), for tests and closed networks.
	AllowPrivate bool
	// Concurrency is how many deliveries are in flight at most (8).
	Concurrency int
	// Poll is the gap between looks for due deliveries when nothing wakes
	// the workers (1s): retries come due, and other replicas queue events.
	Poll   time.Duration
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Retries == nil {
		c.Retries = DefaultRetries
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Dispatcher runs the delivery workers of one process.
type Dispatcher struct {
	q      Queue
	cfg    Config
	client *http.Client
}

// New returns a Dispatcher draining q.
func New(q Queue, cfg Config) *Dispatcher {
	cfg = cfg.withDefaults()
	client := netguard.NewClient(cfg.Timeout, cfg.AllowPrivate)
	client.Transport = telemetry.Transport(client.Transport) // the receiver gets the delivery's traceparent
	return &Dispatcher{q: q, cfg: cfg, client: client}
}

// Run delivers until ctx is done, then waits for the attempts in flight to
// end (each within the timeout) and records them; it never cancels an
// attempt half way, which would count a failure the receiver did not cause.
func (d *Dispatcher) Run(ctx context.Context) {
	lease := d.cfg.Timeout + leaseMargin
	slots := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	ticker := time.NewTicker(d.cfg.Poll)
	defer ticker.Stop()
	freed := make(chan struct{}, 1)
	for {
		free := d.cfg.Concurrency - len(slots)
		var jobs []domain.Job
		if free > 0 {
			var err error
			if jobs, err = d.q.ClaimDeliveries(ctx, free, lease); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("claim webhook deliveries", "error", err)
			}
		}
		for _, job := range jobs {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.deliver(context.WithoutCancel(ctx), job)
				<-slots
				select {
				case freed <- struct{}{}:
				default:
				}
			}()
		}
		if len(jobs) == free && free > 0 {
			continue // there may be more due
		}
		select {
		case <-ctx.Done():
			return
		case <-d.q.WakeWorkers():
		case <-freed:
		case <-ticker.C:
		}
	}
}

// deliver makes one attempt of job and records it, as a trace of its own.
func (d *Dispatcher) deliver(ctx context.Context, job domain.Job) {
	ctx, span := startDelivery(ctx, job)
	defer span.End()
	a := d.attempt(ctx, job)
	endDelivery(span, a)
	if err := d.q.FinishAttempt(ctx, job, a); err != nil {
		d.cfg.Logger.ErrorContext(ctx, "record webhook attempt", "delivery", job.DeliveryID, "error", err)
	}
}

// attempt POSTs job once and decides what follows.
func (d *Dispatcher) attempt(ctx context.Context, job domain.Job) domain.Attempt {
	start := time.Now()
	a := domain.Attempt{At: start}
	res, err := d.post(ctx, job, start)
	a.Duration = time.Since(start)
	var retryAfter time.Duration
	switch {
	case err != nil:
		a.Error = attemptError(err)
	case res.StatusCode/100 == 2:
		a.StatusCode, a.Succeeded = res.StatusCode, true
		return a
	default:
		a.StatusCode, a.Error = res.StatusCode, "HTTP "+strconv.Itoa(res.StatusCode)
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
			retryAfter = parseRetryAfter(res.Header.Get("Retry-After"), start)
		}
	}
	if job.Final || job.Attempts >= len(d.cfg.Retries) {
		return a // failed for good
	}
	a.RetryAt = start.Add(max(d.cfg.Retries[job.Attempts], retryAfter))
	return a
}

// post sends the signed delivery and reads (a bounded part of) the answer,
// so the connection can be reused.
func (d *Dispatcher) post(ctx context.Context, job domain.Job, at time.Time) (*http.Response, error) {
	if len(job.Secrets) == 0 {
		return nil, errUnreadableSecret
	}
	ts := at.Unix()
	var sigs []byte
	for i, secret := range job.Secrets {
		sig, err := signature.Sign(secret, job.EventID, ts, job.Body)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			sigs = append(sigs, ' ')
		}
		sigs = append(sigs, sig...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.URL, bytes.NewReader(job.Body))
	if err != nil {
		return nil, fmt.Errorf("webhook: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentd-webhooks/1")
	req.Header.Set(signature.HeaderID, job.EventID)
	req.Header.Set(signature.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(signature.HeaderSignature, string(sigs))
	res, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	return res, nil
}

// attemptError says why an attempt got no answer, in words for the
// delivery's lastError.
func attemptError(err error) string {
	if errors.Is(err, errUnreadableSecret) {
		return err.Error()
	}
	return netguard.Reason(err, "the receiver")
}

// parseRetryAfter reads a Retry-After in seconds or as an HTTP date; 0 when
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
