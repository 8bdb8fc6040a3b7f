package jobs

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	ex := &Execution{ID: "ex_01", Tenant: "acme", ThreadID: "t1"}
	if err := CheckKey(ArtifactKey(ex, "outputs/a/b.csv")); err != nil {
		t.Errorf("a plain key: %v", err)
	}
	for name, key := range map[string]string{
		"too long":   ArtifactKey(ex, "outputs/"+strings.Repeat("d/", 505)),
		"wide part":  ArtifactKey(ex, "outputs/"+strings.Repeat("w", 256)),
		"not UTF-8":  ArtifactKey(ex, "outputs/\xff"),
		"1025 bytes": strings.Repeat("k", 1025),
	} {
		if err := CheckKey(key); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: CheckKey = %v, want ErrBadKey", name, err)
		}
	}
	if err := CheckKey(strings.Repeat("k/", 512)); err != nil {
		t.Errorf("1024 bytes: %v", err)
	}
}
