package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
)

type skillView struct {
	Name          string    `json:"name"`
	Version       int       `json:"version"`
	Ref           string    `json:"ref"`
	Digest        string    `json:"digest"`
	Size          int64     `json:"size"`
	Files         int       `json:"files"`
	UnpackedBytes int64     `json:"unpacked_bytes"`
	CreatedAt     time.Time `json:"created_at"`
}

func viewSkill(sk jobs.Skill) skillView {
	return skillView{Name: sk.Name, Version: sk.Version, Ref: sk.Ref(), Digest: sk.Digest, Size: sk.Size,
		Files: sk.Files, UnpackedBytes: sk.Unpacked, CreatedAt: sk.Created}
}

// uploadSkill is POST /v1/skills: a multipart form with the fields name, version
// (optional) and file (the archive), or the archive as the raw body with ?name= and
// ?version=.
func (s *Server) uploadSkill(c echo.Context) error {
	req := c.Request()
	name, version, body := c.QueryParam("name"), c.QueryParam("version"), io.Reader(req.Body)
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == "multipart/form-data" {
		fh, err := c.FormFile("file")
		if err != nil {
			var tooBig *http.MaxBytesError
			var busy *service.Error // the budget of bodies ran out while reading
			if errors.As(err, &busy) {
				return busy
			}
			if errors.As(err, &tooBig) {
				return tooLarge("file", "the archive is over %d bytes", tooBig.Limit)
			}
			return invalid("file", "send the archive as a multipart part named \"file\": %v", err)
		}
		f, err := fh.Open()
		if err != nil {
			return err
		}
		defer f.Close()
		body = f
		if v := c.FormValue("name"); v != "" {
			name = v
		}
		if v := c.FormValue("version"); v != "" {
			version = v
		}
	}
	sk, err := s.svc.UploadSkill(req.Context(), tenantOf(c), name, version, body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge("file", "the archive is over %d bytes", tooBig.Limit)
		}
		return err
	}
	return c.JSON(http.StatusCreated, viewSkill(sk))
}

// listSkills is GET /v1/skills: the tenant's skills, by name, each with its versions
// oldest first.
func (s *Server) listSkills(c echo.Context) error {
	all, err := s.svc.ListSkills(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	type item struct {
		Name     string      `json:"name"`
		Latest   int         `json:"latest"`
		Versions []skillView `json:"versions"`
	}
	items := []item{}
	for _, sk := range all {
		if len(items) == 0 || items[len(items)-1].Name != sk.Name {
			items = append(items, item{Name: sk.Name, Versions: []skillView{}})
		}
		it := &items[len(items)-1]
		it.Versions, it.Latest = append(it.Versions, viewSkill(sk)), sk.Version
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items})
}

// deleteSkill is DELETE /v1/skills/{name}, {name}@{version} or {name}?version=: every
// version, or one.
func (s *Server) deleteSkill(c echo.Context) error {
	if err := s.svc.DeleteSkill(c.Request().Context(), tenantOf(c), c.Param("name"), c.QueryParam("version")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
