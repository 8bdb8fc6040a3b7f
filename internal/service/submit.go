package service

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/codeinterp/codeinterp/internal/netguard"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/storage"
)

// Idempotency makes a submission safe to retry: a second submission with the same
// Key returns the first execution; with a different request (Hash) it is a conflict.
type Idempotency struct {
	Key  string // "" when the client sent none
	Hash string // of the request, in a form that ignores encoding differences
}

// MaxIdempotencyKey bounds an idempotency key.
const MaxIdempotencyKey = 255

// Replay returns the execution an earlier submission with the same idempotency key
// created, or nil if there was none. Call it before decoding a request, so a replay
// stores nothing twice.
func (s *Service) Replay(ctx context.Context, tenant string, idem Idempotency) (*jobs.Execution, error) {
	if idem.Key == "" {
		return nil, nil
	}
	if len(idem.Key) > MaxIdempotencyKey {
		return nil, Invalid("Idempotency-Key", "is longer than %d characters", MaxIdempotencyKey)
	}
	id, hash, err := s.cfg.Records.Lookup(ctx, tenant, idem.Key)
	if err != nil || id == "" {
		return nil, err
	}
	return s.replay(ctx, tenant, id, hash == idem.Hash)
}

func (s *Service) replay(ctx context.Context, tenant, id string, sameRequest bool) (*jobs.Execution, error) {
	if !sameRequest {
		return nil, &Error{Code: CodeConflict, Field: "Idempotency-Key", Message: "was already used with a different request"}
	}
	return s.cfg.Records.Get(ctx, tenant, id)
}

// Submit validates req, stores its input files and queues it: a one-off on the task
// queue, a thread's item in the thread's order. It returns the execution as queued
// (or, for a replayed idempotency key, as it stands).
func (s *Service) Submit(ctx context.Context, tenant string, req SubmitRequest, idem Idempotency) (*jobs.Execution, error) {
	if len(idem.Key) > MaxIdempotencyKey {
		return nil, Invalid("Idempotency-Key", "is longer than %d characters", MaxIdempotencyKey)
	}
	if err := s.cfg.Quotas.Submit(ctx, tenant); err != nil {
		return nil, asQuota(err, "")
	}
	prof, err := s.profile(ctx, tenant, req.Profile, deref(req.ThreadID))
	if err != nil {
		return nil, err
	}
	lim := s.limitsOf(prof)
	files, err := req.validate(lim)
	if err != nil {
		return nil, err
	}
	if n := countURLs(files); n > s.cfg.Fetch.MaxFiles {
		return nil, Invalid("files", "names %d files by url; a request may name at most %d (CODEINTERP_FETCH_MAX_FILES): upload the others with POST /v1/files", n, s.cfg.Fetch.MaxFiles)
	}
	if err := s.checkWebhook(tenant, req.WebhookURL); err != nil {
		return nil, err
	}
	network, err := s.network(tenant, req.Network, deref(req.ThreadID))
	if err != nil {
		return nil, err
	}
	plan, err := s.resolveSkills(ctx, tenant, deref(req.ThreadID), req.Skills)
	if err != nil {
		return nil, err
	}
	// Refuse what the quotas refuse before storing or counting anything.
	if err := s.cfg.Records.Admit(ctx, tenant, deref(req.ThreadID)); err != nil {
		return nil, s.quotaError(err)
	}
	var counted int64 // against the upload quota: inline files now, fetched ones once stored
	for _, f := range files {
		counted += int64(len(f.data))
	}
	if err := s.cfg.Quotas.Upload(ctx, tenant, counted); err != nil {
		return nil, asQuota(err, "files")
	}
	ex := &jobs.Execution{
		ID: s.cfg.NewID(), Tenant: tenant, ThreadID: deref(req.ThreadID), Language: req.Language, Profile: prof.Name, Status: jobs.Queued,
		Code: *req.Code, Env: req.Env, TimeoutMS: *req.TimeoutMS, Metadata: req.Metadata,
		CreatedAt: s.cfg.Now().UTC(), WebhookURL: req.WebhookURL, Skills: plan.skills, Egress: network,
	}
	if ex.WebhookURL != "" {
		ex.Webhook = &jobs.WebhookState{State: jobs.DeliveryPending}
	}
	inputs, fetched, err := s.storeInputs(ctx, ex, files, lim)
	if err == nil && fetched > 0 {
		// Fetched files count once their size is known, as uploads of unknown length do.
		err = asQuota(s.cfg.Quotas.Upload(ctx, tenant, fetched), "files")
	}
	if err != nil {
		_ = s.cfg.Quotas.Refund(context.WithoutCancel(ctx), tenant, counted)
		_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), jobs.InputKey(ex, ""))
		return nil, err
	}
	ex.Inputs, counted = inputs, counted+fetched
	created, err := s.cfg.Records.Create(ctx, ex, idem.Key, idem.Hash)
	var over *quota.Exceeded
	if errors.As(err, &over) {
		// Refused after all (a race with another submission): keep nothing.
		_ = s.cfg.Quotas.Refund(context.WithoutCancel(ctx), tenant, counted)
		_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), jobs.InputKey(ex, ""))
		return nil, s.quotaError(err)
	}
	var mismatch *records.ProfileMismatch
	switch { // not created: lost a race with the same Idempotency-Key, or a thread's profile
	case errors.As(err, &mismatch):
		_ = s.cfg.Quotas.Refund(context.WithoutCancel(ctx), tenant, counted)
		_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), jobs.InputKey(ex, ""))
		return nil, asProfileMismatch(err)
	case errors.Is(err, records.ErrIdempotencyMismatch):
		return s.replay(ctx, tenant, created.ID, false)
	case err != nil:
		return nil, err
	case !created.Created:
		return s.replay(ctx, tenant, created.ID, true)
	}
	if err := s.dispatch(ctx, ex); err != nil {
		// Take it back, so the client's retry, with the same key, starts afresh.
		s.withdraw(ctx, ex, idem.Key)
		// The cause may name internal addresses: it goes to the log, not the client.
		s.cfg.Logger.Warn("queue execution", "execution", ex.ID, "err", err)
		return nil, Unavailable("could not queue the execution; retry with the same Idempotency-Key")
	}
	s.keepThreadSkills(ctx, ex, plan)
	return ex, nil
}

// quotaError is the client's error for a quota the records refused: the thread-queue
// quota names thread_id.
func (s *Service) quotaError(err error) error {
	var over *quota.Exceeded
	if errors.As(err, &over) && over.Quota == "thread_queue" {
		return QuotaExceeded(over, "thread_id")
	}
	return asQuota(err, "")
}

// dispatch gets a new record to a worker. A thread's item needs nothing more: Create
// woke its owner or offered the thread to every worker. A one-off goes on the queue.
func (s *Service) dispatch(ctx context.Context, ex *jobs.Execution) error {
	if ex.ThreadID != "" {
		return nil
	}
	return s.cfg.Queue.Enqueue(ctx, ex)
}

// withdraw undoes a Create whose dispatch failed: a one-off record is deleted; a
// thread's is canceled in place (it is already in the thread's order) so it never runs.
func (s *Service) withdraw(ctx context.Context, ex *jobs.Execution, idemKey string) {
	if ex.ThreadID == "" {
		_ = s.cfg.Records.Delete(ctx, ex, idemKey)
		return
	}
	_, _ = s.cfg.Records.Cancel(ctx, ex.Tenant, ex.ID)
	_ = s.cfg.Records.ForgetIdempotencyKey(ctx, ex.Tenant, idemKey)
}

// checkWebhook refuses a webhook the tenant cannot have: without a signing secret,
// or aimed at an address (in any spelling) or a port that deliveries may not reach.
// Names are checked when delivering, after DNS.
func (s *Service) checkWebhook(tenant, raw string) error {
	if raw == "" {
		return nil
	}
	if !s.cfg.WebhookTenants[tenant] {
		return Invalid("webhook_url", "webhooks are not enabled for this tenant: the operator has configured no signing secret for it")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Invalid("webhook_url", "must be an absolute http or https URL")
	}
	if err := s.cfg.WebhookGuard.CheckURL(u); err != nil {
		return Invalid("webhook_url", "%s", strings.TrimPrefix(err.Error(), netguard.ErrForbiddenTarget.Error()+": "))
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// storeInputs puts inline files in storage, checks that uploads exist, and downloads
// the files given by URL straight into storage, each within the space the workspace
// has left after the others, all within one deadline. It returns the inputs, in the
// request's order, and the bytes fetched.
func (s *Service) storeInputs(ctx context.Context, ex *jobs.Execution, files []validFile, lim Limits) ([]jobs.Input, int64, error) {
	inputs := make([]jobs.Input, len(files))
	var total int64
	for i, f := range files {
		switch {
		case f.url != "":
			continue
		case f.object != "":
			key := jobs.UploadKey(ex.Tenant, f.object)
			obj, err := s.cfg.Store.Stat(ctx, key)
			if errors.Is(err, storage.ErrNotFound) {
				return nil, 0, Invalid("files["+strconv.Itoa(i)+"].object", "no upload %q (uploads expire after %s)", f.object, s.cfg.Store.Retention())
			}
			if err != nil {
				return nil, 0, err
			}
			total += obj.Size
			inputs[i] = jobs.Input{Name: f.name, Key: key, Size: obj.Size}
		default:
			total += int64(len(f.data))
			key := jobs.InputKey(ex, f.name)
			if _, err := s.cfg.Store.Put(ctx, key, bytes.NewReader(f.data), int64(len(f.data)), ""); err != nil {
				return nil, 0, err
			}
			inputs[i] = jobs.Input{Name: f.name, Key: key, Size: int64(len(f.data))}
		}
	}
	if total > lim.WorkspaceBytes {
		return nil, 0, TooLarge("files", "input files total %d bytes; the workspace holds %d", total, lim.WorkspaceBytes)
	}
	if countURLs(files) == 0 {
		return inputs, 0, nil
	}
	ctx, cancel := s.withFetchDeadline(ctx)
	defer cancel()
	var fetched int64
	for i, f := range files {
		if f.url == "" {
			continue
		}
		key := jobs.InputKey(ex, f.name)
		obj, err := s.fetchTo(ctx, f.field+".url", f.url, lim.WorkspaceBytes-total, key)
		if err != nil {
			return nil, 0, err
		}
		total, fetched = total+obj.Size, fetched+obj.Size
		inputs[i] = jobs.Input{Name: f.name, Key: key, Size: obj.Size}
	}
	return inputs, fetched, nil
}

func countURLs(files []validFile) int {
	n := 0
	for _, f := range files {
		if f.url != "" {
			n++
		}
	}
	return n
}
