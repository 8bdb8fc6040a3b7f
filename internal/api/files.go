package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// upload is POST /v1/files: a multipart form with one "file" part, or a raw body with
// ?name=. The answer's object can be referenced from many executions.
func (s *Server) upload(c echo.Context) error {
	ctx, tenant := c.Request().Context(), tenantOf(c)
	name, body, size := c.QueryParam("name"), io.Reader(c.Request().Body), c.Request().ContentLength
	if mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type")); mt == "multipart/form-data" {
		fh, err := c.FormFile("file")
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return tooLarge("file", "the upload is over %d bytes", tooBig.Limit)
			}
			return invalid("file", "send the file as a multipart part named \"file\": %v", err)
		}
		f, err := fh.Open()
		if err != nil {
			return err
		}
		defer f.Close()
		body, size = f, fh.Size
		if name == "" {
			name = fh.Filename
		}
	}
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return invalid("name", "give the file a relative name (?name=data.csv): %v", err)
	}
	object := "uploads/" + jobs.NewID()[3:] + "/" + clean
	obj, err := s.cfg.Store.Put(ctx, jobs.UploadKey(tenant, object), body, size, "")
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge("", "the upload is over %d bytes", tooBig.Limit)
		}
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{
		"object": object, "size": obj.Size, "sha256": obj.SHA256,
		"expires_at": s.cfg.Now().Add(s.cfg.Store.Retention()).UTC().Truncate(time.Second),
	})
}
