package sandbox

import (
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"a.csv": "a.csv", "./data//b.csv": "data/b.csv", "a/./b": "a/b", "é/ü.txt": "é/ü.txt",
	} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "..", "../a", "a/../../b", "a/../b", "a\x00b", "a\nb", "\x7f", "\u0085", "a\xffb", ".", "./", strings.Repeat("a", 1025)} {
		if got, err := CleanPath(bad); err == nil {
			t.Errorf("CleanPath(%q) = %q, want an error", bad, got)
		}
	}
}

func TestLanguages(t *testing.T) {
	for _, l := range Languages {
		if !l.Supported() {
			t.Errorf("%s listed but not supported", l)
		}
	}
	if Language("ruby").Supported() || Language("").Supported() {
		t.Error("unlisted languages must not be supported")
	}
}
