package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Limits bound what one request may ask for.
type Limits struct {
	MaxRequestBytes  int64 // a whole POST /v1/executions body
	MaxUploadBytes   int64 // one POST /v1/files body
	WorkspaceBytes   int64 // all input files of one execution
	DefaultTimeoutMS int64
	MaxTimeoutMS     int64
}

const (
	maxCodeBytes     = 1 << 20
	maxMetadataBytes = 16 << 10
	maxEnvVars       = 128
	maxEnvBytes      = 64 << 10
	maxFiles         = 1000
)

var (
	threadRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

type createRequest struct {
	ThreadID   *string           `json:"thread_id"`
	Language   string            `json:"language"`
	Code       *string           `json:"code"`
	Files      []inputFile       `json:"files"`
	TimeoutMS  *int64            `json:"timeout_ms"`
	Env        map[string]string `json:"env"`
	WebhookURL string            `json:"webhook_url"`
	Metadata   json.RawMessage   `json:"metadata"`
}

type inputFile struct {
	Name          string  `json:"name"`
	ContentBase64 *string `json:"content_base64"`
	Object        string  `json:"object"`
}

// validFile is an input file that passed validation: inline data or an upload.
type validFile struct {
	name   string // clean, workspace-relative
	data   []byte // inline content, or nil
	object string // "uploads/...", or ""
}

// validate checks a decoded request and returns its files, decoded. Every problem is
// reported with the JSON path of the field at fault.
func (r *createRequest) validate(lim Limits) ([]validFile, error) {
	if r.ThreadID != nil {
		if err := validThread("thread_id", *r.ThreadID); err != nil {
			return nil, err
		}
	}
	switch r.Language {
	case "":
		r.Language = "python"
	case "python", "bash":
	default:
		return nil, invalid("language", "must be python or bash, not %q", r.Language)
	}
	switch {
	case r.Code == nil || strings.TrimSpace(*r.Code) == "":
		return nil, invalid("code", "is required")
	case len(*r.Code) > maxCodeBytes:
		return nil, tooLarge("code", "is %d bytes; the limit is %d (1 MiB)", len(*r.Code), maxCodeBytes)
	case !utf8.ValidString(*r.Code):
		return nil, invalid("code", "must be valid UTF-8")
	}
	if r.TimeoutMS == nil {
		r.TimeoutMS = &lim.DefaultTimeoutMS
	} else if *r.TimeoutMS < 1 || *r.TimeoutMS > lim.MaxTimeoutMS {
		return nil, invalid("timeout_ms", "must be between 1 and %d", lim.MaxTimeoutMS)
	}
	if err := validateEnv(r.Env); err != nil {
		return nil, err
	}
	if err := validateWebhookURL(r.WebhookURL); err != nil {
		return nil, err
	}
	if len(r.Metadata) > maxMetadataBytes {
		return nil, tooLarge("metadata", "is %d bytes; the limit is %d (16 KiB)", len(r.Metadata), maxMetadataBytes)
	}
	if len(r.Metadata) == 0 || bytes.Equal(r.Metadata, []byte("null")) {
		r.Metadata = json.RawMessage("{}")
	}
	return validateFiles(r.Files, lim)
}

func validateWebhookURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case len(raw) > 2048:
		return invalid("webhook_url", "is longer than 2048 characters")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return invalid("webhook_url", "must be an absolute http or https URL")
	}
	return nil
}

func validThread(field, id string) error {
	if !threadRE.MatchString(id) || id == "." || id == ".." {
		return invalid(field, "must match %s (and not be . or ..)", threadRE)
	}
	return nil
}

func validateEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return invalid("env", "has %d variables; the limit is %d", len(env), maxEnvVars)
	}
	size := 0
	for k, v := range env {
		field := "env." + k
		if !envKeyRE.MatchString(k) {
			return invalid(field, "variable names must match %s", envKeyRE)
		}
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return invalid(field, "must be UTF-8 without NUL bytes")
		}
		size += len(k) + len(v)
	}
	if size > maxEnvBytes {
		return tooLarge("env", "is %d bytes; the limit is %d", size, maxEnvBytes)
	}
	return nil
}

func validateFiles(files []inputFile, lim Limits) ([]validFile, error) {
	if len(files) > maxFiles {
		return nil, invalid("files", "has %d files; the limit is %d", len(files), maxFiles)
	}
	var out []validFile
	seen := map[string]int{}
	var total int64
	for i, f := range files {
		field := fmt.Sprintf("files[%d]", i)
		name, err := sandbox.CleanPath(f.Name)
		if err != nil {
			return nil, invalid(field+".name", "%s", strings.TrimPrefix(err.Error(), sandbox.ErrBadPath.Error()+": "))
		}
		if j, dup := seen[name]; dup {
			return nil, invalid(field+".name", "%q is also files[%d]", name, j)
		}
		seen[name] = i
		switch {
		case f.ContentBase64 != nil && f.Object != "":
			return nil, invalid(field, "give content_base64 or object, not both")
		case f.ContentBase64 != nil:
			data, err := base64.StdEncoding.DecodeString(*f.ContentBase64)
			if err != nil {
				return nil, invalid(field+".content_base64", "is not valid base64: %v", err)
			}
			total += int64(len(data))
			out = append(out, validFile{name: name, data: data})
		case f.Object != "":
			if !strings.HasPrefix(f.Object, "uploads/") || strings.Contains(f.Object, "..") {
				return nil, invalid(field+".object", "must be an object returned by POST /v1/files (uploads/...)")
			}
			out = append(out, validFile{name: name, object: f.Object})
		default:
			return nil, invalid(field, "give content_base64 or object")
		}
	}
	if total > lim.WorkspaceBytes {
		return nil, tooLarge("files", "inline files total %d bytes; the workspace holds %d", total, lim.WorkspaceBytes)
	}
	return out, nil
}

// decodeJSON reads a JSON body into v, refusing unknown fields, trailing data and
// bodies over the limit, with errors that name the field at fault.
func decodeJSON(req *http.Request, v any, body []byte) error {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: "invalid_argument", Message: "Content-Type must be application/json"}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "unexpected data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		unknown = "json: unknown field "
	)
	switch {
	case errors.As(err, &tooBig):
		return tooLarge("", "the request body is over %d bytes; upload big files with POST /v1/files and reference them by object", tooBig.Limit)
	case errors.As(err, &syntax):
		return invalid("", "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		return invalid(typ.Field, "must be %s, not %s", typ.Type, typ.Value)
	case strings.HasPrefix(err.Error(), unknown):
		field := strings.Trim(strings.TrimPrefix(err.Error(), unknown), `"`)
		return invalid(field, "unknown field")
	case errors.Is(err, io.EOF):
		return invalid("", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", "the JSON body ends too early")
	}
	return invalid("", "bad JSON: %v", err)
}
