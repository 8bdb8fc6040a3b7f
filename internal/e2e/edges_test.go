package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/codeinterp/codeinterp/internal/provision"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/storage"
)

// fetch sends a request as tenant acme through the OpenAPI-checking client, without
// following redirects, and returns the answer with its body read.
func (s *stack) fetch(t *testing.T, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, body)
	req.Header.Set("Authorization", "Bearer key-a")
	cli := &http.Client{Transport: s.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cli.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// getURL downloads url (a presigned link) and returns the answer with its body read.
func getURL(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download %s: %d %s", url, resp.StatusCode, b)
	}
	return resp, b
}

// Files users' code wrote never render as pages: read inline from the API they come
// with nosniff and a CSP sandbox, and as attachments when a browser would run them;
// presigned links (redirects and the execution's files) are always attachments.
func TestDownloadsAreNotPages(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	files := map[string]string{
		"outputs/page.html": "<html><script>alert(document.cookie)</script></html>",
		"outputs/pic.svg":   `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`,
		"data.xml":          `<?xml-stylesheet href="x.xsl"?><a/>`,
		"app.js":            "alert(1)",
		"report.csv":        "a,b\n1,2\n",
		"notes.txt":         "<script>alert(1)</script>",
	}
	var code strings.Builder
	for name, body := range files {
		code.WriteString("open(" + pyQuote(name) + ", 'w').write(" + pyQuote(body) + ")\n")
	}
	ex := s.run(t, map[string]any{"thread_id": "pages", "code": code.String()})
	if ex.Status != "succeeded" || len(ex.Files) != 2 {
		t.Fatalf("run: %s %+v files %+v", ex.Status, ex.Error, ex.Files)
	}
	for _, f := range ex.Files {
		resp, _ := getURL(t, f.URL)
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
			t.Errorf("%s: the execution's link serves Content-Disposition %q", f.Name, cd)
		}
	}
	for name, active := range map[string]bool{
		"outputs/page.html": true, "outputs/pic.svg": true, "data.xml": true, "app.js": true,
		"report.csv": false, "notes.txt": false,
	} {
		resp, body := s.fetch(t, "GET", "/v1/threads/pages/files/"+name+"?inline=1", nil)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || string(body) != files[name] {
			t.Fatalf("%s inline: %d %q", name, resp.StatusCode, body)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != "sandbox" {
			t.Errorf("%s inline: nosniff %q, CSP %q", name, h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
		cd := h.Get("Content-Disposition")
		if active != strings.HasPrefix(cd, "attachment") {
			t.Errorf("%s inline (%s): Content-Disposition %q, want an attachment: %v", name, h.Get("Content-Type"), cd, active)
		}
		if active && !strings.Contains(cd, name[strings.LastIndex(name, "/")+1:]) {
			t.Errorf("%s inline: the attachment is not named: %q", name, cd)
		}
		resp, _ = s.fetch(t, "GET", "/v1/threads/pages/files/"+name, nil)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("%s: %d, want a redirect", name, resp.StatusCode)
		}
		dl, got := getURL(t, resp.Header.Get("Location"))
		if string(got) != files[name] || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("%s presigned: %q, Content-Disposition %q", name, got, dl.Header.Get("Content-Disposition"))
		}
	}
}

// pyQuote writes s as a Python string literal (JSON strings are Python literals).
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// scopedUser provisions a bucket of the test's own and a user allowed only that
// bucket, with the root credentials testenv's MinIO runs with, as the setup step does.
func scopedUser(t *testing.T) (root storage.Config, user, secret string) {
	t.Helper()
	root = testenv.MinIO(t)
	user, secret = "svc-"+strings.ToLower(rand.Text()[:10]), rand.Text()
	if _, err := provision.Run(context.Background(), provision.Config{Root: root, Skills: skillBucket(root), User: user, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	return root, user, secret
}

// skillBucket is the skills' bucket beside root's, as config.SkillStorage names it.
func skillBucket(root storage.Config) storage.Config {
	root.Bucket, root.Keep = root.Bucket+"-skills", true
	return root
}

// The whole stack works as the bucket-scoped user, which can do nothing else.
func TestServicesRunAsBucketScopedUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, user, secret := scopedUser(t)
	s := newStack(t, stackOptions{env: map[string]string{
		"CODEINTERP_S3_ACCESS_KEY": user, "CODEINTERP_S3_SECRET_KEY": secret, "CODEINTERP_S3_BUCKET": root.Bucket,
		// No demo secret is left: no dev mode either.
		"CODEINTERP_DEV_MODE": "false",
	}})
	if s.cfg.DevMode || s.cfg.S3AccessKey != user {
		t.Fatalf("the stack is not configured as the scoped user: dev mode %v, user %q", s.cfg.DevMode, s.cfg.S3AccessKey)
	}
	resp, up := s.fetch(t, "POST", "/v1/files?name=in.csv", strings.NewReader("a,b\n1,2\n"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, up)
	}
	var upload struct{ Object string }
	if err := json.Unmarshal(up, &upload); err != nil {
		t.Fatal(err)
	}
	ex := s.run(t, map[string]any{
		"code":  "import pandas as pd\ndf = pd.read_csv('in.csv')\ndf.to_csv('outputs/out.csv', index=False)\nprint(open('x.txt').read())",
		"files": []map[string]any{{"name": "in.csv", "object": upload.Object}, {"name": "x.txt", "content_base64": "aGk="}},
	})
	if ex.Status != "succeeded" || ex.Stdout != "hi\n" || len(ex.Files) != 1 {
		t.Fatalf("one-off: %s %q %+v %+v", ex.Status, ex.Stdout, ex.Error, ex.Files)
	}
	if _, got := getURL(t, ex.Files[0].URL); string(got) != "a,b\n1,2\n" {
		t.Fatalf("output: %q", got)
	}
	if resp, b := s.fetch(t, "PUT", "/v1/threads/scoped/files/data/in.txt", strings.NewReader("thread file")); resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d %s", resp.StatusCode, b)
	}
	if resp, b := s.fetch(t, "GET", "/v1/threads/scoped/files/data/in.txt?inline=1", nil); resp.StatusCode != 200 || string(b) != "thread file" {
		t.Fatalf("GET inline: %d %q", resp.StatusCode, b)
	}
	if resp, b := s.fetch(t, "DELETE", "/v1/threads/scoped", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
	}
	// The same credentials reach nothing but the bucket.
	cli, err := minio.New(root.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(user, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.MakeBucket(ctx, root.Bucket+"-x", minio.MakeBucketOptions{}); minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Fatalf("the services' user created a bucket: %v", err)
	}
	other, err := storage.New(s.storageConfig) // another bucket, root's
	if err == nil {
		err = other.Init(ctx)
	}
	if err == nil {
		_, err = other.Put(ctx, "globex/secret.txt", strings.NewReader("s"), 1, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.StatObject(ctx, s.storageConfig.Bucket, "globex/secret.txt", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Fatalf("the services' user reached another bucket: %v", err)
	}
}
