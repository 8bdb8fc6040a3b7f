package service

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/codeinterp/codeinterp/jobs/webhook"
)

// fetchTimeout bounds fetching one input file given by URL, body included.
const fetchTimeout = 30 * time.Second

// maxURLBytes bounds an input file's URL.
const maxURLBytes = 2048

// checkInputURL refuses, before any connection, a URL the service will not fetch: not
// http(s), too long, with credentials, or naming an internal address.
func (s *Service) checkInputURL(field, raw string) (*url.URL, error) {
	if len(raw) > maxURLBytes {
		return nil, Invalid(field, "is longer than %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Invalid(field, "want an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return nil, Invalid(field, "must not carry credentials")
	}
	if err := s.cfg.WebhookGuard.CheckURL(u); err != nil {
		return nil, Invalid(field, "%s", forbiddenMessage)
	}
	return u, nil
}

const forbiddenMessage = "points to a loopback, private, link-local or otherwise internal address, or a port the service may not use"

// openURL starts downloading an input file the client named by URL, through the
// egress guard webhooks use: every address is checked after DNS (no loopback,
// private or metadata addresses, no rebinding), redirects are not followed and no
// proxy is used. A body longer than limit fails its Read with a [TooLarge] error
// naming field. The caller closes the body; its reads end within fetchTimeout.
func (s *Service) openURL(ctx context.Context, field, raw string, limit int64) (io.ReadCloser, int64, error) {
	u, err := s.checkInputURL(field, raw)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, 0, Invalid(field, "want an absolute http:// or https:// URL")
	}
	req.Header.Set("User-Agent", "codeinterp (input file)")
	resp, err := s.fetcher.Do(req)
	if err != nil {
		cancel()
		if errors.Is(err, webhook.ErrForbiddenTarget) {
			return nil, 0, Invalid(field, "%s", forbiddenMessage)
		}
		// Generic, like webhook errors: the dial error would make the service a port
		// scanner of whatever the guard lets through.
		return nil, 0, Invalid(field, "could not be fetched: the connection failed or timed out")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		cancel()
		msg := ""
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg = " (redirects are not followed: give the final URL)"
		}
		return nil, 0, Invalid(field, "could not be fetched: the server answered %s%s", resp.Status, msg)
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		cancel()
		return nil, 0, TooLarge(field, "is %d bytes; the limit is %d", resp.ContentLength, limit)
	}
	return &cappedBody{r: resp.Body, left: limit, field: field, limit: limit, cancel: cancel}, resp.ContentLength, nil
}

// FetchURL downloads an input file given by URL, at most limit bytes, through the
// egress guard (see openURL). Errors name field.
func (s *Service) FetchURL(ctx context.Context, field, raw string, limit int64) ([]byte, error) {
	body, _, err := s.openURL(ctx, field, raw, limit)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	var se *Error
	switch {
	case errors.As(err, &se):
		return nil, se
	case err != nil:
		return nil, Invalid(field, "could not be fetched: the transfer failed or timed out")
	}
	return data, nil
}

// cappedBody is a response body that fails past its limit, instead of truncating.
type cappedBody struct {
	r      io.ReadCloser
	left   int64
	field  string
	limit  int64
	cancel context.CancelFunc
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, TooLarge(b.field, "is over the limit of %d bytes", b.limit)
		}
		return b.r.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error {
	defer b.cancel()
	return b.r.Close()
}

// fetchInputs downloads the input files given by URL, each up to the upload limit,
// all of them within the workspace of the execution's profile.
func (s *Service) fetchInputs(ctx context.Context, files []validFile, lim Limits) error {
	var total int64
	for i := range files {
		f := &files[i]
		if f.url == "" {
			total += int64(len(f.data))
			continue
		}
		data, err := s.FetchURL(ctx, f.field+".url", f.url, min(lim.MaxUploadBytes, lim.WorkspaceBytes))
		if err != nil {
			return err
		}
		f.data, total = data, total+int64(len(data))
		if total > lim.WorkspaceBytes {
			return TooLarge("files", "the files total over %d bytes, the workspace's size", lim.WorkspaceBytes)
		}
	}
	return nil
}
