package api

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/internal/service"
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
			var busy *service.Error // the budget of bodies ran out while reading
			if errors.As(err, &busy) {
				return busy
			}
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
	up, err := s.svc.Upload(ctx, tenant, name, body, size)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge("", "the upload is over %d bytes", tooBig.Limit)
		}
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{
		"object": up.Object, "size": up.Size, "sha256": up.SHA256, "expires_at": up.ExpiresAt,
	})
}
