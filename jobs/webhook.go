package jobs

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
	"net/http"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Webhook delivery: when an execution with a webhook_url ends, an asynq task POSTs the
// execution object to it, signed, and retries for over an hour.

const (
	// TypeWebhook delivers an execution's webhook.
	TypeWebhook = "webhook:deliver"
	// WebhookMaxRetry retries with delays from 10 s doubling to 10 min: about 1 h 40 min.
	WebhookMaxRetry = 15
)

// EnqueueWebhook queues the delivery of ex's webhook, once per execution.
func (e *Enqueuer) EnqueueWebhook(ctx context.Context, ex *Execution) error {
	payload, _ := json.Marshal(runPayload{ID: ex.ID})
	_, err := e.cli.EnqueueContext(ctx, asynq.NewTask(TypeWebhook, payload),
		asynq.TaskID("webhook:"+ex.ID), asynq.Queue(QueueTasks), asynq.MaxRetry(WebhookMaxRetry),
		asynq.Timeout(time.Minute))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue webhook of %s: %w", ex.ID, err)
	}
	return nil
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

// Webhooks delivers webhooks: the asynq handler of TypeWebhook.
type Webhooks struct {
	Records   *Records
	Presigner Presigner
	Secrets   map[string]string // tenant → signing secret
	Client    *http.Client      // from WebhookGuard.Client
	Logger    *slog.Logger
}

// ProcessTask POSTs the execution object to its webhook URL. A non-2xx answer or a
// network error is retried by asynq; the last failure marks the delivery failed.
func (w *Webhooks) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p runPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("bad %s payload: %w", t.Type(), asynq.SkipRetry)
	}
	ex, err := w.Records.Get(ctx, "", p.ID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ex.WebhookURL == "" || (ex.Webhook != nil && ex.Webhook.State == "delivered") {
		return nil
	}
	status, derr := w.deliver(ctx, ex)
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	state := WebhookState{Attempts: retried + 1, LastStatus: status}
	switch {
	case derr == nil:
		state.State = "delivered"
	case errors.Is(derr, ErrForbiddenTarget) || retried >= maxRetry:
		state.State, state.LastError = "failed", derr.Error()
	default:
		state.State, state.LastError = "pending", derr.Error()
	}
	if err := w.Records.SetWebhook(ctx, ex.ID, state); err != nil {
		w.Logger.Warn("record webhook delivery", "execution", ex.ID, "err", err)
	}
	if state.State == "pending" {
		return derr // asynq retries with backoff
	}
	return nil
}

func (w *Webhooks) deliver(ctx context.Context, ex *Execution) (int, error) {
	secret, ok := w.Secrets[ex.Tenant]
	if !ok {
		return 0, fmt.Errorf("no webhook secret for tenant %s: %w", ex.Tenant, ErrForbiddenTarget)
	}
	ex.Webhook = nil // the body shows the execution, not its own delivery
	v, err := Render(ctx, ex, w.Presigner)
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
	req.Header.Set("Codeinterp-Delivery", "whd_"+ex.ID[3:]) // the same on every retry: receivers dedupe
	req.Header.Set("Codeinterp-Signature", Sign(secret, time.Now(), body))
	resp, err := w.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// SetWebhook records the delivery state of an execution's webhook, leaving the rest
// of the record as it is.
func (r *Records) SetWebhook(ctx context.Context, id string, st WebhookState) error {
	key := r.key(id)
	return r.rdb.Watch(ctx, func(tx *redis.Tx) error {
		data, err := tx.HGet(ctx, key, "json").Bytes()
		if err != nil {
			return err
		}
		var ex Execution
		if err := json.Unmarshal(data, &ex); err != nil {
			return err
		}
		ex.Webhook = &st
		out, err := json.Marshal(&ex)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "json", out)
			return nil
		})
		return err
	}, key)
}

// WebhookOnEnd is the RecordsConfig.OnEnd that queues webhook deliveries.
func WebhookOnEnd(e *Enqueuer, log *slog.Logger) func(context.Context, *Execution) {
	return func(ctx context.Context, ex *Execution) {
		if ex.WebhookURL == "" {
			return
		}
		if err := e.EnqueueWebhook(ctx, ex); err != nil {
			log.Error("queue webhook", "execution", ex.ID, "err", err)
		}
	}
}
