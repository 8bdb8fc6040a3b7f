package sandbox

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"
)

// Errors about workspace paths and files.
var (
	ErrBadPath    = errors.New("bad workspace path")
	ErrNotRegular = errors.New("not a regular file")
	ErrNoFile     = errors.New("no such file in workspace")
)

// MaxPathLen bounds a workspace-relative path.
const MaxPathLen = 1024

// CleanPath checks that name is a relative path that stays inside the workspace and
// returns its clean form ("./a//b.csv" becomes "a/b.csv"). Absolute paths, "..",
// NUL and control characters are refused.
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
