package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
)

// longName is a valid-looking workspace path of n bytes whose segments are at most
// seg bytes.
func longName(n, seg int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		k := min(seg, n-b.Len())
		if n-b.Len()-k == 1 { // leave room for one more "/x", never a trailing "/"
			k--
		}
		b.WriteString(strings.Repeat("n", k))
	}
	return b.String()
}

// Over-long names and thread ids are refused with a 400 naming the field, on every
// route that puts them in a storage key; the longest allowed ones are stored.
func TestLongNamesAndThreadIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	maxName := longName(service.MaxNameBytes, service.MaxNameSegmentBytes)
	tooLong := longName(service.MaxNameBytes+1, service.MaxNameSegmentBytes)
	bigSegment := "d/" + strings.Repeat("s", service.MaxNameSegmentBytes+1) + ".csv"
	maxThread := strings.Repeat("t", service.MaxThreadBytes)
	longThread := maxThread + "t"
	inline := func(thread string, names ...string) string {
		var files []map[string]string
		for _, n := range names {
			files = append(files, map[string]string{"name": n, "content_base64": b64("x")})
		}
		req := map[string]any{"code": "1", "files": files}
		if thread != "" {
			req["thread_id"] = thread
		}
		body, _ := json.Marshal(req)
		return string(body)
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"inline name at the cap", "POST", "/v1/executions", inline(maxThread, "a.csv", maxName), 202, ""},
		{"inline name over the cap", "POST", "/v1/executions", inline("", "a.csv", tooLong), 400, "files[1].name"},
		{"inline name segment over 255", "POST", "/v1/executions", inline("", bigSegment), 400, "files[0].name"},
		{"thread id over the cap", "POST", "/v1/executions", inline(longThread, "a.csv"), 400, "thread_id"},
		{"huge thread id", "POST", "/v1/executions", inline(strings.Repeat("t", 100<<10), "a.csv"), 400, "thread_id"},
		{"upload object over the cap", "POST", "/v1/executions",
			`{"code":"1","files":[{"name":"a","object":"uploads/` + strings.Repeat("o", 600) + `"}]}`, 400, "files[0].object"},
		{"upload name at the cap", "POST", "/v1/files?name=" + maxName, "x", 201, ""},
		{"upload name over the cap", "POST", "/v1/files?name=" + tooLong, "x", 400, "name"},
		{"upload name segment over 255", "POST", "/v1/files?name=" + bigSegment, "x", 400, "name"},
		{"thread file at the caps", "PUT", "/v1/threads/" + maxThread + "/files/" + maxName, "x", 201, ""},
		{"thread file over the cap", "PUT", "/v1/threads/t1/files/" + tooLong, "x", 400, "path"},
		{"thread file segment over 255", "PUT", "/v1/threads/t1/files/" + bigSegment, "x", 400, "path"},
		{"thread file, thread id over the cap", "PUT", "/v1/threads/" + longThread + "/files/a.csv", "x", 400, "id"},
		{"get thread, id over the cap", "GET", "/v1/threads/" + longThread, "", 400, "id"},
		{"list, thread id over the cap", "GET", "/v1/executions?thread_id=" + longThread, "", 400, "thread_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, tc.method, tc.path, "key-a", tc.body)
			code, field := r.errorField()
			if r.status != tc.status || field != tc.field || (tc.status == 400 && code != "invalid_argument") {
				t.Fatalf("got %d %s field=%q, want %d field=%q; body %v", r.status, code, field, tc.status, tc.field, r.body)
			}
			if tc.status == 400 {
				msg, _ := r.body["error"].(map[string]any)["message"].(string)
				if !strings.Contains(msg, "at most") {
					t.Fatalf("the message does not say the limit: %q", msg)
				}
			}
		})
	}
	// A multipart upload's file name is checked the same way.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	// (multipart keeps only a file name's last segment)
	fw, _ := mw.CreateFormFile("file", strings.Repeat("m", service.MaxNameSegmentBytes+1))
	fw.Write([]byte("x"))
	mw.Close()
	req, _ := http.NewRequest("POST", b.srv.URL+"/v1/files", &body)
	req.Header.Set("Authorization", "Bearer key-a")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error struct{ Field string } }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 400 || e.Error.Field != "name" {
		t.Fatalf("multipart upload with a long file name: %d field %q", resp.StatusCode, e.Error.Field)
	}
}

// The longest tenant, thread id, op id and name the API accepts make keys the real
// MinIO stores; longer segments are what MinIO refuses, which is why names are capped
// before they reach storage.
func TestLongestKeysAreStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tenant := strings.Repeat("T", 64)
	if _, err := api.ParseKeys(tenant+":k", ""); err != nil {
		t.Fatalf("a 64-byte tenant: %v", err)
	}
	if _, err := api.ParseKeys(tenant+"T:k", ""); err == nil {
		t.Fatal("a 65-byte tenant was accepted: the name caps assume at most 64")
	}
	name := longName(service.MaxNameBytes, service.MaxNameSegmentBytes)
	op := &jobs.Execution{ID: jobs.NewOpID(), Tenant: tenant, ThreadID: strings.Repeat("h", service.MaxThreadBytes)}
	for _, key := range []string{jobs.InputKey(op, name), jobs.UploadKey(tenant, jobs.NewUploadObject(name))} {
		if _, err := b.store.Put(ctx, key, strings.NewReader("x"), 1, ""); err != nil {
			t.Fatalf("the longest key (%d bytes): %v", len(key), err)
		}
	}
	// MinIO refuses a segment of 252 bytes: this is what the segment cap guards.
	over := jobs.InputKey(op, strings.Repeat("s", 252))
	if _, err := b.store.Put(ctx, over, strings.NewReader("x"), 1, ""); err == nil {
		t.Fatal("MinIO stored a 252-byte segment: the measured limit the cap is based on changed")
	}
}
