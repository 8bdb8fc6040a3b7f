package sandbox

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Errors about workspace paths and files.
var (
	ErrBadPath    = errors.New("bad workspace path")
	ErrNotRegular = errors.New("not a regular file")
	ErrNoFile     = errors.New("no such file in workspace")
	// ErrTooLarge means a file was not read: it is larger than the ReadLimits allow.
	ErrTooLarge = errors.New("file too large to read")
)

// MaxPathLen bounds a workspace-relative path.
const MaxPathLen = 1024

// CleanPath checks that name is a relative path that stays inside the workspace and
// returns its clean form ("./a//b.csv" becomes "a/b.csv"). Absolute paths, "..",
// NUL and control characters, and bytes that are not UTF-8 are refused.
func CleanPath(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%w: empty", ErrBadPath)
	case len(name) > MaxPathLen:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadPath, MaxPathLen)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("%w: %q is absolute; use a path relative to /workspace", ErrBadPath, name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("%w: %q contains a control character", ErrBadPath, name)
	case !utf8.ValidString(name):
		return "", fmt.Errorf("%w: %q is not UTF-8", ErrBadPath, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q leaves the workspace", ErrBadPath, name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", fmt.Errorf("%w: %q names the workspace itself", ErrBadPath, name)
	}
	return clean, nil
}

// IsOutput reports whether a clean workspace path is under outputs/, where the files
// a run produces are collected from.
func IsOutput(clean string) bool { return strings.HasPrefix(clean, "outputs/") }

// File is a file to put into the workspace.
type File struct {
	Name string // workspace-relative; checked with CleanPath
	Size int64
	Body io.Reader // exactly Size bytes
}

// FileInfo describes a file read from the workspace.
type FileInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// ReadLimits bound what one [Sandbox.ReadFiles] call reads; zero fields bound nothing.
type ReadLimits struct {
	Each  int64 // a file larger than this is not read
	Total int64 // a file that would bring the bytes read past this is not read
}

// Admits reports whether a file of size bytes may be read after sent bytes were.
func (l ReadLimits) Admits(size, sent int64) bool {
	return size >= 0 && (l.Each <= 0 || size <= l.Each) && (l.Total <= 0 || sent+size <= l.Total)
}
