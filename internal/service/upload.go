package service

import (
	"context"
	"io"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/storage"
)

// Upload is a stored upload, to be referenced from executions by Object.
type Upload struct {
	Object    string // "uploads/<id>/<name>"
	Size      int64
	SHA256    string
	ExpiresAt time.Time
}

// Upload stores a file once, for any number of executions. body may be of unknown
// size (-1).
func (s *Service) Upload(ctx context.Context, tenant, name string, body io.Reader, size int64) (Upload, error) {
	if name == "" {
		return Upload{}, Invalid("name", "give the file a relative name (?name=data.csv)")
	}
	clean, err := ValidName("name", name)
	if err != nil {
		return Upload{}, err
	}
	if err := s.cfg.Quotas.Submit(ctx, tenant); err != nil {
		return Upload{}, asQuota(err, "")
	}
	object := jobs.NewUploadObject(clean)
	obj, err := s.storeCounted(ctx, tenant, jobs.UploadKey(tenant, object), body, size)
	if err != nil {
		return Upload{}, err
	}
	return Upload{Object: object, Size: obj.Size, SHA256: obj.SHA256,
		ExpiresAt: s.cfg.Now().Add(s.cfg.Store.Retention()).UTC().Truncate(time.Second)}, nil
}

// storeCounted stores an uploaded body and counts it against the tenant's upload
// bytes of the day: a known size before storing, an unknown one after (an upload
// past the quota is then deleted again).
func (s *Service) storeCounted(ctx context.Context, tenant, key string, body io.Reader, size int64) (storage.Object, error) {
	if size >= 0 {
		if err := s.cfg.Quotas.Upload(ctx, tenant, size); err != nil {
			return storage.Object{}, asQuota(err, "")
		}
	}
	obj, err := s.cfg.Store.Put(ctx, key, body, size, "")
	if err != nil || size >= 0 {
		return obj, err
	}
	if err := s.cfg.Quotas.Upload(ctx, tenant, obj.Size); err != nil {
		_, _ = s.cfg.Store.DeletePrefix(context.WithoutCancel(ctx), key)
		return storage.Object{}, asQuota(err, "")
	}
	return obj, nil
}
