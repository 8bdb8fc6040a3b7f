package sandbox

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on what an [Outcome] carries. The kernel runs in the user's process, so
// everything it reports may be forged; [Outcome.Clean] holds it to these.
const (
	MaxOutputs      = 1000     // Outputs, and Workspace entries
	MaxErrorName    = 256      // bytes of Error.Name
	MaxErrorValue   = 64 << 10 // bytes of Error.Value
	MaxTraceback    = 256 << 10
	MaxNotes        = 10
	MaxNote         = 512 // bytes of one note
	maxExitCode     = math.MaxInt32
	minExitCode     = math.MinInt32
	truncatedMarker = "\n[truncated]"
)

// Clean returns out with what a kernel may have forged brought within the contract:
// outputs and listed files are clean, distinct workspace paths (outputs under
// outputs/), at most MaxOutputs of each, with sizes not below 0; results of a known
// type, image files under outputs/; error strings valid UTF-8 and bounded; the exit
// code a 32-bit one; CPU seconds finite and not below 0; notes bounded. What it drops
// from Outputs and Workspace it says in a note. Cleaning a clean outcome changes
// nothing, so runtimes and their callers may both clean.
func (out Outcome) Clean() Outcome {
	var dropped int
	out.Outputs, dropped = cleanPaths(out.Outputs, IsOutput)
	if dropped > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d reported output paths refused: not clean paths under outputs/, repeated, or past %d", dropped, MaxOutputs))
	}
	out.Workspace, dropped = cleanListing(out.Workspace)
	if dropped > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d workspace listing entries refused: not clean paths, repeated, or past %d", dropped, MaxOutputs))
	}
	out.Results = slices.DeleteFunc(slices.Clone(out.Results), func(r Rich) bool { return !r.Valid() })
	if out.Error != nil {
		e := *out.Error
		e.Name, e.Value, e.Traceback = bound(e.Name, MaxErrorName), bound(e.Value, MaxErrorValue), bound(e.Traceback, MaxTraceback)
		out.Error = &e
	}
	out.ExitCode = min(max(out.ExitCode, minExitCode), maxExitCode)
	if math.IsNaN(out.CPUSeconds) || math.IsInf(out.CPUSeconds, 0) || out.CPUSeconds < 0 {
		out.CPUSeconds = 0
	}
	out.Notes = BoundNotes(out.Notes)
	return out
}

func cleanPaths(paths []string, keep func(string) bool) ([]string, int) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if c, err := CleanPath(p); err == nil && c == p && keep(c) && !seen[c] && len(out) < MaxOutputs {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, len(paths) - len(out)
}

func cleanListing(files []FileInfo) ([]FileInfo, int) {
	var out []FileInfo
	seen := map[string]bool{}
	for _, f := range files {
		if c, err := CleanPath(f.Name); err == nil && c == f.Name && !seen[c] && len(out) < MaxOutputs {
			seen[c] = true
			f.Size = max(f.Size, 0)
			out = append(out, f)
		}
	}
	if files != nil && out == nil {
		out = []FileInfo{} // an empty listing is still a listing
	}
	return out, len(files) - len(out)
}

// Valid reports whether r is a rich result of a known type: text, or a PNG file
// under outputs/.
func (r Rich) Valid() bool {
	switch r.Type {
	case "text/plain", "text/html":
		return r.File == "" && utf8.ValidString(r.Text)
	case "image/png":
		c, err := CleanPath(r.File)
		return err == nil && c == r.File && IsOutput(c) && r.Text == ""
	}
	return false
}

// BoundNotes returns at most MaxNotes of notes, each valid UTF-8 of at most MaxNote
// bytes; the last one says how many more were left out.
func BoundNotes(notes []string) []string {
	var out []string
	for i, n := range notes {
		if i == MaxNotes-1 && len(notes) > MaxNotes {
			return append(out, fmt.Sprintf("%d more notes left out", len(notes)-i))
		}
		out = append(out, bound(n, MaxNote))
	}
	return out
}

// bound returns s as valid UTF-8 of at most max bytes, marked when cut.
func bound(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max - len(truncatedMarker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMarker
}
