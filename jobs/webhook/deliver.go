// Package webhook delivers execution webhooks: the asynq task that POSTs the
// execution object to the client's URL, signed with the tenant's secret
// (Codeinterp-Signature), and its retry policy (over an hour). Where a delivery may
// connect is netguard's to say.
//
// It reads records through the small interface it declares; it knows nothing of
// sandboxes, and of HTTP only as a client.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/internal/netguard"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
)

// MaxRetry retries with delays from 10 s doubling to 10 min: about 1 h 40 min. A
// delivery postponed because its tenant already has deliveries under way is no
// attempt: asynq's own retry budget (taskRetries) is far larger.
const MaxRetry = 15

// taskRetries bounds asynq's retries of one delivery task, postponements included.
const taskRetries = 1000

// ErrBusy postpones a delivery: its tenant already has TenantConcurrency deliveries
// under way in this process.
var ErrBusy = errors.New("the tenant's webhook deliveries are busy; postponed")

// RetryDelay is the delay before retry n of a delivery: from 10 s doubling to 10 min,
// so delivery is tried for over an hour; a postponed one (err is ErrBusy) is retried
// in a second.
func RetryDelay(n int, err error) time.Duration {
	if errors.Is(err, ErrBusy) {
		return time.Second
	}
	return min(10*time.Second<<min(n, 10), 10*time.Minute)
}

// Enqueue queues the delivery of ex's webhook, once per execution.
func Enqueue(ctx context.Context, cli *asynq.Client, ex *jobs.Execution) error {
	_, err := cli.EnqueueContext(ctx, asynq.NewTask(jobs.TypeWebhook, jobs.Payload{ID: ex.ID}.Encode()),
		asynq.TaskID("webhook:"+ex.ID), asynq.Queue(jobs.QueueWebhooks), asynq.MaxRetry(taskRetries),
		asynq.Timeout(time.Minute))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue webhook of %s: %w", ex.ID, err)
	}
	return nil
}

// OnEnd is the records.Config.OnEnd that queues webhook deliveries.
func OnEnd(cli *asynq.Client, log *slog.Logger) func(context.Context, *jobs.Execution) {
	return func(ctx context.Context, ex *jobs.Execution) {
		if ex.WebhookURL == "" {
			return
		}
		if err := Enqueue(ctx, cli, ex); err != nil {
			log.Error("queue webhook", "execution", ex.ID, "err", err)
		}
	}
}

// Sign returns the Codeinterp-Signature header of body sent at t with secret:
// t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Records is what delivery needs of the record store; *records.Store provides it.
type Records interface {
	Get(ctx context.Context, tenant, id string) (*jobs.Execution, error)
	SetWebhook(ctx context.Context, id string, st jobs.WebhookState) error
}

// Deliverer delivers webhooks: the asynq handler of [jobs.TypeWebhook].
type Deliverer struct {
	Records   Records
	Presigner jobs.Presigner
	Secrets   map[string]string // tenant → signing secret
	Client    *http.Client      // from netguard.Guard.Client
	Logger    *slog.Logger
	// TenantConcurrency bounds one tenant's deliveries under way in this process, so
	// a tenant whose receiver never answers holds few slots; 0: no bound.
	TenantConcurrency int

	mu   sync.Mutex
	busy map[string]int
}

// take reserves a delivery slot of tenant's, or reports that none is free.
func (d *Deliverer) take(tenant string) (release func(), ok bool) {
	if d.TenantConcurrency <= 0 {
		return func() {}, true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy == nil {
		d.busy = map[string]int{}
	}
	if d.busy[tenant] >= d.TenantConcurrency {
		return nil, false
	}
	d.busy[tenant]++
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.busy[tenant]--; d.busy[tenant] == 0 {
			delete(d.busy, tenant)
		}
	}, true
}

// ProcessTask POSTs the execution object to its webhook URL. A non-2xx answer or a
// network error is retried by asynq; the last failure marks the delivery failed.
func (d *Deliverer) ProcessTask(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.DecodePayload(t)
	if err != nil {
		return err
	}
	ex, err := d.Records.Get(ctx, "", p.ID)
	if errors.Is(err, records.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ex.WebhookURL == "" || (ex.Webhook != nil && ex.Webhook.State == jobs.DeliveryDelivered) {
		return nil
	}
	release, ok := d.take(ex.Tenant)
	if !ok {
		return ErrBusy // asynq retries it in a second; no attempt is counted
	}
	attempts := 1
	if ex.Webhook != nil {
		attempts = ex.Webhook.Attempts + 1
	}
	status, derr := d.deliver(ctx, ex)
	release()
	state := jobs.WebhookState{Attempts: attempts, LastStatus: status}
	switch {
	case derr == nil:
		state.State = jobs.DeliveryDelivered
	case errors.Is(derr, netguard.ErrForbiddenTarget) || attempts > MaxRetry:
		state.State, state.LastError = jobs.DeliveryFailed, publicError(derr)
	default:
		state.State, state.LastError = jobs.DeliveryPending, publicError(derr)
	}
	if derr != nil {
		d.Logger.Info("webhook delivery failed", "execution", ex.ID, "tenant", ex.Tenant, "attempt", attempts, "err", derr)
	}
	if err := d.Records.SetWebhook(ctx, ex.ID, state); err != nil {
		d.Logger.Warn("record webhook delivery", "execution", ex.ID, "err", err)
	}
	if state.State == jobs.DeliveryPending {
		return derr // asynq retries with backoff
	}
	return nil
}

func (d *Deliverer) deliver(ctx context.Context, ex *jobs.Execution) (int, error) {
	secret, ok := d.Secrets[ex.Tenant]
	if !ok {
		return 0, fmt.Errorf("no webhook secret for tenant %s: %w", ex.Tenant, netguard.ErrForbiddenTarget)
	}
	ex.Webhook = nil // the body shows the execution, not its own delivery
	v, err := jobs.Render(ctx, ex, d.Presigner)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ex.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "codeinterp-webhook/1")
	req.Header.Set("Codeinterp-Event", "execution.completed")
	req.Header.Set("Codeinterp-Delivery", jobs.DeliveryID(ex.ID)) // the same on every retry: receivers dedupe
	req.Header.Set("Codeinterp-Signature", Sign(secret, time.Now(), body))
	resp, err := d.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &statusError{code: resp.StatusCode}
	}
	return resp.StatusCode, nil
}

// publicError is what a tenant is told of a failed delivery: the kind of failure, not
// the dialer's words, which would make webhooks a port scanner of the service's
// network. The full error is in the operator's log.
func publicError(err error) string {
	var status *statusError
	var netErr net.Error
	switch {
	case errors.As(err, &status):
		return err.Error()
	case errors.Is(err, netguard.ErrForbiddenTarget):
		return "target address not allowed"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	default:
		return "connection failed"
	}
}

// statusError is a receiver's non-2xx answer.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("webhook answered %d", e.code) }
