package service

import (
	"context"
	"io"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
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
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return Upload{}, Invalid("name", "give the file a relative name (?name=data.csv): %v", err)
	}
	object := jobs.NewUploadObject(clean)
	obj, err := s.cfg.Store.Put(ctx, jobs.UploadKey(tenant, object), body, size, "")
	if err != nil {
		return Upload{}, err
	}
	return Upload{Object: object, Size: obj.Size, SHA256: obj.SHA256,
		ExpiresAt: s.cfg.Now().Add(s.cfg.Store.Retention()).UTC().Truncate(time.Second)}, nil
}
