package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/storage"
)

const (
	maxWait           = 60 * time.Second
	maxIdempotencyKey = 255
)

// createExecution is POST /v1/executions.
func (s *Server) createExecution(c echo.Context) error {
	ctx, tenant := c.Request().Context(), tenantOf(c)
	idemKey := c.Request().Header.Get("Idempotency-Key")
	if len(idemKey) > maxIdempotencyKey {
		return invalid("Idempotency-Key", "is longer than %d characters", maxIdempotencyKey)
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	reqHash := hashBytes(body)
	if idemKey != "" {
		// Answer a replay before storing its files a second time.
		if id, hash, err := s.cfg.Records.Lookup(ctx, tenant, idemKey); err != nil {
			return err
		} else if id != "" {
			return s.replay(c, tenant, id, hash == reqHash)
		}
	}

	var req createRequest
	if err := decodeJSON(c.Request(), &req, body); err != nil {
		return err
	}
	files, err := req.validate(s.cfg.Limits)
	if err != nil {
		return err
	}
	if err := s.checkWebhook(tenant, req.WebhookURL); err != nil {
		return err
	}
	ex := &jobs.Execution{
		ID: s.cfg.NewID(), Tenant: tenant, ThreadID: deref(req.ThreadID), Language: req.Language, Status: jobs.Queued,
		Code: *req.Code, Env: req.Env, TimeoutMS: *req.TimeoutMS, Metadata: req.Metadata,
		CreatedAt: s.cfg.Now().UTC(), WebhookURL: req.WebhookURL,
	}
	if ex.WebhookURL != "" {
		ex.Webhook = &jobs.WebhookState{State: "pending"}
	}
	if ex.Inputs, err = s.storeInputs(c, ex, files); err != nil {
		return err
	}
	created, err := s.cfg.Records.Create(ctx, ex, idemKey, reqHash)
	switch { // not created: lost a race with the same Idempotency-Key
	case errors.Is(err, jobs.ErrIdempotencyMismatch):
		return s.replay(c, tenant, created.ID, false)
	case err != nil:
		return err
	case !created.Created:
		return s.replay(c, tenant, created.ID, true)
	}
	if err := s.dispatch(ctx, ex); err != nil {
		// Take it back, so the client's retry, with the same key, starts afresh.
		s.withdraw(ctx, ex, idemKey)
		return unavailable("could not queue the execution: %v", err)
	}
	return s.respondCreated(c, ex)
}

// dispatch gets a new record to a worker. A thread's item needs nothing more: Create
// woke its owner or offered the thread to every worker. A one-off goes on the queue.
func (s *Server) dispatch(ctx context.Context, ex *jobs.Execution) error {
	if ex.ThreadID != "" {
		return nil
	}
	return s.cfg.Queue.Enqueue(ctx, ex)
}

// withdraw undoes a Create whose dispatch failed: a one-off record is deleted; a
// thread's is canceled in place (it is already in the thread's order) so it never runs.
func (s *Server) withdraw(ctx context.Context, ex *jobs.Execution, idemKey string) {
	if ex.ThreadID == "" {
		_ = s.cfg.Records.Delete(ctx, ex, idemKey)
		return
	}
	_, _ = s.cfg.Records.Cancel(ctx, ex.Tenant, ex.ID, s.cfg.Now)
	_ = s.cfg.Records.ForgetIdempotencyKey(ctx, ex.Tenant, idemKey)
}

// checkWebhook refuses a webhook the tenant cannot have: without a signing secret,
// or aimed at an address literal that deliveries may not reach. Names are checked
// when delivering, after DNS.
func (s *Server) checkWebhook(tenant, raw string) error {
	if raw == "" {
		return nil
	}
	if !s.cfg.WebhookTenants[tenant] {
		return invalid("webhook_url", "webhooks are not enabled for this tenant: the operator has configured no signing secret for it")
	}
	u, _ := url.Parse(raw)
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !s.cfg.WebhookGuard.Permitted(ip) {
		return invalid("webhook_url", "targets %s, a loopback, private, link-local or otherwise internal address", ip)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (s *Server) replay(c echo.Context, tenant, id string, sameRequest bool) error {
	if !sameRequest {
		e := *errConflict
		e.Field, e.Message = "Idempotency-Key", "was already used with a different request"
		return &e
	}
	ex, err := s.cfg.Records.Get(c.Request().Context(), tenant, id)
	if err != nil {
		return err
	}
	return s.respondCreated(c, ex)
}

func (s *Server) respondCreated(c echo.Context, ex *jobs.Execution) error {
	v, err := jobs.Render(c.Request().Context(), ex, s.cfg.Store)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/executions/"+ex.ID)
	return c.JSON(http.StatusAccepted, v)
}

// storeInputs puts inline files in storage and checks that uploads exist.
func (s *Server) storeInputs(c echo.Context, ex *jobs.Execution, files []validFile) ([]jobs.Input, error) {
	ctx := c.Request().Context()
	var inputs []jobs.Input
	var total int64
	for i, f := range files {
		if f.object != "" {
			key := jobs.UploadKey(ex.Tenant, f.object)
			obj, err := s.cfg.Store.Stat(ctx, key)
			if errors.Is(err, storage.ErrNotFound) {
				return nil, invalid("files["+strconv.Itoa(i)+"].object", "no upload %q (uploads expire after %s)", f.object, s.cfg.Store.Retention())
			}
			if err != nil {
				return nil, err
			}
			total += obj.Size
			inputs = append(inputs, jobs.Input{Name: f.name, Key: key, Size: obj.Size})
			continue
		}
		total += int64(len(f.data))
		key := jobs.InputKey(ex, f.name)
		if _, err := s.cfg.Store.Put(ctx, key, bytes.NewReader(f.data), int64(len(f.data)), ""); err != nil {
			return nil, err
		}
		inputs = append(inputs, jobs.Input{Name: f.name, Key: key, Size: int64(len(f.data))})
	}
	if total > s.cfg.Limits.WorkspaceBytes {
		return nil, tooLarge("files", "input files total %d bytes; the workspace holds %d", total, s.cfg.Limits.WorkspaceBytes)
	}
	return inputs, nil
}

// getExecution is GET /v1/executions/{id}[?wait=duration].
func (s *Server) getExecution(c echo.Context) error {
	ctx, tenant, id := c.Request().Context(), tenantOf(c), c.Param("id")
	wait, err := parseWait(c.QueryParam("wait"))
	if err != nil {
		return err
	}
	var done <-chan struct{}
	if wait > 0 {
		var stop func()
		done, stop = s.cfg.Waiter.Watch(id) // before the read, so an end in between is not missed
		defer stop()
	}
	ex, err := s.execution(ctx, tenant, id)
	if err != nil {
		return err
	}
	if wait > 0 && !ex.Status.Terminal() {
		if ex, err = s.awaitEnd(ctx, tenant, id, done, wait); err != nil {
			return err
		}
	}
	v, err := jobs.Render(ctx, ex, s.cfg.Store)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// execution loads one of the tenant's executions, or answers 404.
func (s *Server) execution(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	ex, err := s.cfg.Records.Get(ctx, tenant, id)
	if errors.Is(err, jobs.ErrNotFound) || (err == nil && ex.Kind != jobs.KindExecution) {
		return nil, notFound("execution " + id)
	}
	return ex, err
}

// awaitEnd waits until done is closed (the record ended) or wait passes, and reloads
// the record.
func (s *Server) awaitEnd(ctx context.Context, tenant, id string, done <-chan struct{}, wait time.Duration) (*jobs.Execution, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.cfg.Records.Get(ctx, tenant, id)
}

// parseWait reads ?wait= as a Go duration ("30s", "1m") or a number of seconds.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, serr := strconv.ParseFloat(s, 64)
		if serr != nil {
			return 0, invalid("wait", "must be a duration like 30s, or seconds")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 || d > maxWait {
		return 0, invalid("wait", "must be between 0 and %s", maxWait)
	}
	return d, nil
}

func readBody(c echo.Context) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(c.Request().Body); err != nil {
		return nil, jsonError(err)
	}
	return buf.Bytes(), nil
}

func hashBytes(b []byte) string {
	// Canonical form, so a replay with reordered fields or spacing still matches.
	var v any
	if json.Unmarshal(b, &v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			b = canon
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
