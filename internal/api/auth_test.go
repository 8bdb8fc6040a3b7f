package api

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	sum := sha256.Sum256([]byte("hashed-key"))
	k, err := ParseKeys("acme:key-a, globex:key-b", "# operators' keys\ninitech:sha256:"+hex.EncodeToString(sum[:])+"\n\n")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"key-a": "acme", "key-b": "globex", "hashed-key": "initech"} {
		if got, ok := k.Tenant(key); !ok || got != want {
			t.Errorf("Tenant(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := k.Tenant("sha256:" + hex.EncodeToString(sum[:])); ok {
		t.Error("the stored hash itself must not work as a key")
	}
	_, err = ParseKeys("nocolon,bad tenant:k,acme:", "x:sha256:zz")
	for _, want := range []string{"entry 1", "entry 2", "entry 3", "line 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error should report %s: %v", want, err)
		}
	}
	// "." and ".." would be path components of the tenant's storage keys.
	_, err = ParseKeys("ok:k1,.:k2,..:k3,...:k4", "..:sha256:"+hex.EncodeToString(sum[:]))
	for _, want := range []string{"entry 2", "entry 3", "line 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error should report %s: %v", want, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "entry 1:") || strings.Contains(err.Error(), "entry 4")) {
		t.Errorf("ok and ... are tenant names: %v", err)
	}
	if _, err := ParseKeys("", ""); err == nil {
		t.Error("no keys should be an error")
	}
}
