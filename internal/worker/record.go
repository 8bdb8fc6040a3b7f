package worker

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/codeinterp/codeinterp/jobs"
)

// recordReserve is the room execute leaves in a record, when it fits the outcome
// before collecting outputs, for the files and notes added after.
const recordReserve = 256 << 10

// fitRecord cuts what an execution produced so that its stored JSON stays within
// limit bytes: the inline stdout and stderr first, then the results (a prefix is
// kept). It sets the truncated flags, adds a note and reports whether it cut; the
// request itself (code, metadata) is never touched, so a record may still exceed
// limit if that alone does.
func fitRecord(ex *jobs.Execution, limit int) bool {
	if jsonLen(ex) <= limit {
		return false
	}
	stdout, stderr, results := ex.Stdout, ex.Stderr, ex.Results
	ex.Stdout, ex.Stderr, ex.Results = "", "", nil
	ex.Notes = append(ex.Notes, fmt.Sprintf("the execution's record would have passed %d bytes: its inline stdout, stderr or results were cut to fit", limit))
	room := limit - jsonLen(ex)
	if text := room - jsonLen(results) + len("null"); text >= 0 {
		// Results stay; stdout and stderr share what is left, each at least half of it
		// if it needs that much.
		ex.Results = results
		outLen, errLen := jsonStringLen(stdout), jsonStringLen(stderr)
		outRoom := min(outLen, max(text/2, text-errLen))
		ex.Stdout = jsonPrefix(stdout, outRoom)
		ex.Stderr = jsonPrefix(stderr, text-jsonStringLen(ex.Stdout))
	} else {
		n, used := 0, len("[]")
		for _, r := range results {
			if used += jsonLen(r) + len(","); used > room+len("null") {
				break
			}
			n++
		}
		if n > 0 {
			ex.Results = results[:n]
		}
	}
	ex.StdoutTruncated = ex.StdoutTruncated || len(ex.Stdout) < len(stdout)
	ex.StderrTruncated = ex.StderrTruncated || len(ex.Stderr) < len(stderr)
	ex.ResultsTruncated = ex.ResultsTruncated || len(ex.Results) < len(results)
	if jsonLen(ex) > limit { // the estimates were off: keep nothing rather than too much
		ex.Stdout, ex.Stderr, ex.Results = "", "", nil
		ex.StdoutTruncated, ex.StderrTruncated = ex.StdoutTruncated || stdout != "", ex.StderrTruncated || stderr != ""
		ex.ResultsTruncated = ex.ResultsTruncated || len(results) > 0
	}
	return true
}

func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// jsonStringLen is how many bytes s takes inside a JSON string.
func jsonStringLen(s string) int {
	n := 0
	for _, r := range s {
		n += jsonRuneLen(r)
	}
	return n
}

// jsonPrefix returns the longest prefix of s that takes at most n bytes inside a JSON
// string.
func jsonPrefix(s string, n int) string {
	used := 0
	for i, r := range s {
		if used += jsonRuneLen(r); used > n {
			return s[:i]
		}
	}
	return s
}

// jsonRuneLen is how many bytes encoding/json writes for r in a string, or more.
func jsonRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 6 // \u00XX, or \ufffd for invalid UTF-8
	}
	return utf8.RuneLen(r)
}
