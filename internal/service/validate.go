package service

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/codeinterp/codeinterp/sandbox"
)

const (
	maxCodeBytes     = 1 << 20
	maxMetadataBytes = 16 << 10
	maxEnvVars       = 128
	maxEnvBytes      = 64 << 10
	maxFiles         = 1000
)

// Caps that keep every storage key valid: S3 keys are at most 1024 bytes, and MinIO
// refuses a path segment (between slashes) over 251 bytes (measured against the
// shipped MinIO: a segment is a file name on its disks, where Linux allows 255 and
// MinIO adds to the name). The longest key the API
// writes is a thread operation's input, <tenant>/<thread>/<op id>/inputs/<name>:
// 64 + 1 + 128 + 1 + 29 + 1 + 7 = 231 bytes before the name (tenants are at most 64
// bytes, internal/api), so a name of 512 leaves the key at 743 bytes. Uploads are
// <tenant>/uploads/<ulid>/<name>. Names are checked after cleaning, in bytes of UTF-8.
const (
	MaxThreadBytes      = 128 // a thread id
	MaxNameBytes        = 512 // an input file's workspace-relative name
	MaxNameSegmentBytes = 250 // one segment of that name
	// maxObjectBytes bounds a reference to an upload: "uploads/<26-char ulid>/<name>".
	maxObjectBytes = len("uploads/") + 26 + 1 + MaxNameBytes
)

var (
	threadRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// SubmitRequest is what a client asks to run: the body of POST /v1/executions.
type SubmitRequest struct {
	ThreadID   *string           `json:"thread_id"`
	Language   sandbox.Language  `json:"language"`
	Profile    string            `json:"profile"`
	Code       *string           `json:"code"`
	Files      []InputFile       `json:"files"`
	TimeoutMS  *int64            `json:"timeout_ms"`
	Env        map[string]string `json:"env"`
	WebhookURL string            `json:"webhook_url"`
	Metadata   json.RawMessage   `json:"metadata"`
	// Skills to attach, "name" (the latest version) or "name@version"; on a thread
	// they stay attached for its later executions.
	Skills []string `json:"skills"`
	// Network asks for egress (network.go); nil: no network.
	Network *NetworkRequest `json:"network"`
}

// InputFile is a file to put in the workspace: inline or an earlier upload.
type InputFile struct {
	Name          string  `json:"name"`
	ContentBase64 *string `json:"content_base64"`
	Object        string  `json:"object"`
	URL           string  `json:"url"`
}

// validFile is an input file that passed validation: inline data, an upload, or a
// URL to fetch (into data).
type validFile struct {
	field  string // files[i]
	name   string // clean, workspace-relative
	data   []byte // inline content, or nil
	object string // "uploads/...", or ""
	url    string // to fetch, or ""
}

// validate checks a decoded request and returns its files, decoded. Every problem is
// reported with the JSON path of the field at fault.
func (r *SubmitRequest) validate(lim Limits) ([]validFile, error) {
	if r.ThreadID != nil {
		if err := ValidThread("thread_id", *r.ThreadID); err != nil {
			return nil, err
		}
	}
	if r.Language == "" {
		r.Language = sandbox.DefaultLanguage
	}
	if !r.Language.Supported() {
		return nil, Invalid("language", "must be one of %s, not %q", languageList(), r.Language)
	}
	switch {
	case r.Code == nil || strings.TrimSpace(*r.Code) == "":
		return nil, Invalid("code", "is required")
	case len(*r.Code) > maxCodeBytes:
		return nil, TooLarge("code", "is %d bytes; the limit is %d (1 MiB)", len(*r.Code), maxCodeBytes)
	case !utf8.ValidString(*r.Code):
		return nil, Invalid("code", "must be valid UTF-8")
	}
	if r.TimeoutMS == nil {
		r.TimeoutMS = &lim.DefaultTimeoutMS
	} else if *r.TimeoutMS < 1 || *r.TimeoutMS > lim.MaxTimeoutMS {
		return nil, Invalid("timeout_ms", "must be between 1 and %d (the profile's maximum)", lim.MaxTimeoutMS)
	}
	if err := validateEnv(r.Env); err != nil {
		return nil, err
	}
	if err := validateWebhookURL(r.WebhookURL); err != nil {
		return nil, err
	}
	if len(r.Metadata) > maxMetadataBytes {
		return nil, TooLarge("metadata", "is %d bytes; the limit is %d (16 KiB)", len(r.Metadata), maxMetadataBytes)
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
		return Invalid("webhook_url", "is longer than 2048 characters")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return Invalid("webhook_url", "must be an absolute http or https URL")
	}
	return nil
}

// ValidThread checks a thread id given in field.
func ValidThread(field, id string) error {
	switch {
	case len(id) > MaxThreadBytes:
		return Invalid(field, "is %d bytes; thread ids are at most %d", len(id), MaxThreadBytes)
	case !threadRE.MatchString(id) || id == "." || id == "..":
		return Invalid(field, "must be 1 to %d of A-Z a-z 0-9 . _ - (and not . or ..)", MaxThreadBytes)
	}
	return nil
}

// ValidName checks an input file's name given in field and returns it cleaned:
// relative, inside the workspace, and short enough for every storage key it becomes
// part of.
func ValidName(field, name string) (string, error) {
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return "", Invalid(field, "%s", strings.TrimPrefix(err.Error(), sandbox.ErrBadPath.Error()+": "))
	}
	if len(clean) > MaxNameBytes {
		return "", Invalid(field, "is %d bytes; names are at most %d", len(clean), MaxNameBytes)
	}
	for _, seg := range strings.Split(clean, "/") {
		if len(seg) > MaxNameSegmentBytes {
			return "", Invalid(field, "has a path segment of %d bytes; segments are at most %d", len(seg), MaxNameSegmentBytes)
		}
	}
	return clean, nil
}

func validateEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return Invalid("env", "has %d variables; the limit is %d", len(env), maxEnvVars)
	}
	size := 0
	for k, v := range env {
		field := "env." + k
		if !envKeyRE.MatchString(k) {
			return Invalid(field, "variable names must match %s", envKeyRE)
		}
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return Invalid(field, "must be UTF-8 without NUL bytes")
		}
		size += len(k) + len(v)
	}
	if size > maxEnvBytes {
		return TooLarge("env", "is %d bytes; the limit is %d", size, maxEnvBytes)
	}
	return nil
}

func validateFiles(files []InputFile, lim Limits) ([]validFile, error) {
	if len(files) > maxFiles {
		return nil, Invalid("files", "has %d files; the limit is %d", len(files), maxFiles)
	}
	var out []validFile
	seen := map[string]int{}
	var total int64
	for i, f := range files {
		field := fmt.Sprintf("files[%d]", i)
		name, err := ValidName(field+".name", f.Name)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[name]; dup {
			return nil, Invalid(field+".name", "%q is also files[%d]", name, j)
		}
		seen[name] = i
		given := 0
		for _, set := range []bool{f.ContentBase64 != nil, f.Object != "", f.URL != ""} {
			if set {
				given++
			}
		}
		switch {
		case given != 1:
			return nil, Invalid(field, "give one of content_base64, object or url")
		case f.ContentBase64 != nil:
			data, err := base64.StdEncoding.DecodeString(*f.ContentBase64)
			if err != nil {
				return nil, Invalid(field+".content_base64", "is not valid base64: %v", err)
			}
			total += int64(len(data))
			out = append(out, validFile{field: field, name: name, data: data})
		case f.Object != "":
			if !strings.HasPrefix(f.Object, "uploads/") || strings.Contains(f.Object, "..") || len(f.Object) > maxObjectBytes {
				return nil, Invalid(field+".object", "must be an object returned by POST /v1/files (uploads/..., at most %d bytes)", maxObjectBytes)
			}
			out = append(out, validFile{field: field, name: name, object: f.Object})
		default: // fetched by Submit, after the quotas admit the request
			out = append(out, validFile{field: field, name: name, url: f.URL})
		}
	}
	if total > lim.WorkspaceBytes {
		return nil, TooLarge("files", "inline files total %d bytes; the workspace holds %d", total, lim.WorkspaceBytes)
	}
	return out, nil
}

func languageList() string {
	names := make([]string, len(sandbox.Languages))
	for i, l := range sandbox.Languages {
		names[i] = string(l)
	}
	return strings.Join(names, ", ")
}
