package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// What workers store for a tenant per day is bounded (issue 22, finding 10): past
// it, a run's output files are not stored (a note says why; the run still
// succeeds) and a thread file read is refused, while another tenant stores on.
func TestAbuseStoredBytesQuota(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: map[string]string{"CODEINTERP_QUOTA_STORED_BYTES_DAY": "100000"}})
	write := func(key, name string) notedExecution {
		t.Helper()
		var ex execution
		if code := s.callAs(t, key, "POST", "/v1/executions", map[string]any{"thread_id": "t",
			"code": "open('outputs/" + name + "', 'wb').write(b'x' * 80000)"}, &ex); code != http.StatusAccepted {
			t.Fatalf("POST: %d", code)
		}
		var done notedExecution
		for done.Status == "" || done.Status == "queued" || done.Status == "running" {
			s.callAs(t, key, "GET", "/v1/executions/"+ex.ID+"?wait=30s", nil, &done)
		}
		if done.Status != "succeeded" {
			t.Fatalf("%s: %s %+v", name, done.Status, done.Error)
		}
		return done
	}
	stored := func() int64 {
		var u struct {
			Current struct {
				StoredBytesToday int64 `json:"stored_bytes_today"`
			} `json:"current"`
		}
		a := s.request(t, "key-a", "GET", "/v1/usage", nil)
		if err := json.Unmarshal(a.body, &u); err != nil {
			t.Fatal(err)
		}
		return u.Current.StoredBytesToday
	}

	if ex := write("key-a", "a.bin"); len(ex.Files) != 1 {
		t.Fatalf("first run's files: %+v", ex.Files)
	}
	if n := stored(); n != 80000 {
		t.Fatalf("stored today %d, want 80000", n)
	}
	// Checked before a run's files are stored, counted after: this one still fits.
	if ex := write("key-a", "b.bin"); len(ex.Files) != 1 {
		t.Fatalf("second run's files: %+v", ex.Files)
	}
	ex := write("key-a", "c.bin")
	if len(ex.Files) != 0 || !strings.Contains(strings.Join(ex.Notes, "\n"), "CODEINTERP_QUOTA_STORED_BYTES_DAY") {
		t.Fatalf("past the quota: files %+v, notes %q; want none stored, and a note saying why", ex.Files, ex.Notes)
	}
	wantRefused(t, "a thread file read past the quota", s.request(t, "key-a", "GET", "/v1/threads/t/files/outputs/c.bin?inline=true", nil),
		http.StatusTooManyRequests, "quota_exceeded")
	if n := stored(); n != 160000 {
		t.Fatalf("stored today %d, want 160000: what was refused counts nothing", n)
	}
	if ex := write("key-b", "g.bin"); len(ex.Files) != 1 {
		t.Fatalf("globex's files meanwhile: %+v", ex.Files)
	}
}
