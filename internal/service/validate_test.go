package service

import (
	"errors"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/jobs"
)

// maxTenantBytes is the longest tenant internal/api accepts (its tenantRE; its tests
// pin it).
const maxTenantBytes = 64

func field(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

func TestValidName(t *testing.T) {
	seg := strings.Repeat("s", MaxNameSegmentBytes)
	ok := []string{"a.csv", "dir/" + seg, seg + "/" + seg, strings.Repeat("é", 125)}
	for _, name := range ok {
		if _, err := ValidName("files[0].name", name); err != nil {
			t.Errorf("%d bytes: %v", len(name), err)
		}
	}
	bad := map[string]string{
		"":                               "empty",
		"../x":                           "leaves",
		"/etc/passwd":                    "absolute",
		seg + "s":                        "segment of 251 bytes",
		"d/" + seg + "s/x":               "segment of 251 bytes",
		strings.Repeat("é", 126):         "segment of 252 bytes", // 126 two-byte runes
		strings.Repeat(seg[:200]+"/", 3): "is 602 bytes",         // cleaned: no trailing slash
	}
	for name, want := range bad {
		_, err := ValidName("files[3].name", name)
		if err == nil || field(err) != "files[3].name" || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q…: %v, want a files[3].name error saying %q", name, err, want)
		}
	}
}

func TestValidThread(t *testing.T) {
	if err := ValidThread("thread_id", strings.Repeat("t", MaxThreadBytes)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		strings.Repeat("t", MaxThreadBytes+1): "is 129 bytes",
		strings.Repeat("t", 10000):            "is 10000 bytes",
		"a/b":                                 "must be 1 to 128",
		"..":                                  "must be 1 to 128",
		"":                                    "must be 1 to 128",
	} {
		err := ValidThread("thread_id", id)
		if err == nil || field(err) != "thread_id" || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", id, err, want)
		}
	}
}

// The longest names and ids the caps allow still make keys S3 and MinIO accept: at
// most 1024 bytes, no segment over 255.
func TestLongestKeysFit(t *testing.T) {
	tenant := strings.Repeat("T", maxTenantBytes)
	thread := strings.Repeat("h", MaxThreadBytes)
	seg := strings.Repeat("n", MaxNameSegmentBytes)
	name := seg + "/" + seg + "/" // 512 bytes in all
	name += strings.Repeat("n", MaxNameBytes-len(name))
	if _, err := ValidName("name", name); err != nil {
		t.Fatal(err)
	}
	op := &jobs.Execution{ID: jobs.NewOpID(), Tenant: tenant, ThreadID: thread}
	ex := &jobs.Execution{ID: jobs.NewID(), Tenant: tenant, ThreadID: thread}
	object := jobs.NewUploadObject(name)
	if len(object) > maxObjectBytes {
		t.Fatalf("an upload's object is %d bytes, over maxObjectBytes %d", len(object), maxObjectBytes)
	}
	for _, key := range []string{jobs.InputKey(op, name), jobs.InputKey(ex, name), jobs.UploadKey(tenant, object),
		jobs.SnapshotKey(jobs.NewThreadKey(tenant, thread))} {
		if len(key) > 1024 {
			t.Errorf("key of %d bytes: %.60s…", len(key), key)
		}
		for _, s := range strings.Split(key, "/") {
			if len(s) > 251 { // measured: MinIO refuses longer segments
				t.Errorf("segment of %d bytes in %.60s…", len(s), key)
			}
		}
	}
}
