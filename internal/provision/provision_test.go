package provision_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/codeinterp/codeinterp/internal/provision"
	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// scoped provisions a bucket of the test's own and its user, with testenv's root
// credentials, and returns the storage config of that user.
func scoped(t *testing.T) (root, user storage.Config) {
	t.Helper()
	root = testenv.MinIO(t)
	user = root
	user.AccessKey, user.SecretKey = "svc-"+rand.Text()[:10], rand.Text()
	cfg := provision.Config{Root: root, User: user.AccessKey, Secret: user.SecretKey}
	for range 2 { // idempotent: a restarted stack runs it again
		res, err := provision.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Bucket != root.Bucket || res.User != user.AccessKey {
			t.Fatalf("Run = %+v", res)
		}
	}
	return root, user
}

func client(t *testing.T, c storage.Config) *minio.Client {
	t.Helper()
	cli, err := minio.New(c.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

func accessDenied(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: allowed to the bucket-scoped user", what)
	}
	if code := minio.ToErrorResponse(err).Code; code != "AccessDenied" {
		t.Fatalf("%s: %v (code %q), want AccessDenied", what, err, code)
	}
}

// The services' user does everything the services do in its bucket.
func TestScopedUserServesItsBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, user := scoped(t)
	s, err := storage.New(user)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(ctx); err != nil { // what every service does at start
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 100)
	if _, err := s.Put(ctx, "acme/t1/ex_1/outputs/a.txt", strings.NewReader(body), int64(len(body)), "text/plain"); err != nil {
		t.Fatal(err)
	}
	// An unknown length is a multipart upload.
	if _, err := s.Put(ctx, "acme/t1/ex_1/outputs/b.bin", strings.NewReader(body), -1, ""); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Open(ctx, "acme/t1/ex_1/outputs/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != body {
		t.Fatalf("read back %q", got)
	}
	url, _, err := s.PresignGet(ctx, "acme/t1/ex_1/outputs/a.txt", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("presigned download as the scoped user: %d", resp.StatusCode)
	}
	if n, err := s.DeleteBefore(ctx, "acme/", time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("DeleteBefore = %d, %v", n, err)
	}
	if n, err := s.DeletePrefix(ctx, "acme/t1/"); err != nil || n != 2 {
		t.Fatalf("DeletePrefix = %d, %v", n, err)
	}
}

// ... and nothing else: no other bucket, no new bucket, no administration.
func TestScopedUserReachesNothingElse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, user := scoped(t)
	// Another bucket on the same server, with an object, made by root.
	other := testenv.MinIO(t)
	otherStore, err := storage.New(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := otherStore.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := otherStore.Put(ctx, "globex/secret.txt", strings.NewReader("secret"), 6, ""); err != nil {
		t.Fatal(err)
	}

	cli := client(t, user)
	// MinIO answers a user's bucket listing with the buckets its policy reaches.
	buckets, err := cli.ListBuckets(ctx)
	if err != nil && minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Fatal(err)
	}
	for _, b := range buckets {
		if b.Name != user.Bucket {
			t.Fatalf("the bucket-scoped user sees bucket %s", b.Name)
		}
	}
	accessDenied(t, "create a bucket", cli.MakeBucket(ctx, user.Bucket+"-new", minio.MakeBucketOptions{}))
	for obj := range cli.ListObjects(ctx, other.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		accessDenied(t, "list another bucket", obj.Err)
		break
	}
	_, err = cli.StatObject(ctx, other.Bucket, "globex/secret.txt", minio.StatObjectOptions{})
	accessDenied(t, "read another bucket's object", err)
	obj, err := cli.GetObject(ctx, other.Bucket, "globex/secret.txt", minio.GetObjectOptions{})
	if err == nil {
		_, err = io.ReadAll(obj)
	}
	accessDenied(t, "get another bucket's object", err)
	_, err = cli.PutObject(ctx, other.Bucket, "x", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	accessDenied(t, "write another bucket", err)
	accessDenied(t, "delete another bucket's object", cli.RemoveObject(ctx, other.Bucket, "globex/secret.txt", minio.RemoveObjectOptions{}))
	accessDenied(t, "delete its own bucket", cli.RemoveBucket(ctx, user.Bucket))
	// A presigned URL the user signs for another bucket does not open it either.
	u, err := cli.PresignedGetObject(ctx, other.Bucket, "globex/secret.txt", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("presigned GET of another bucket: %d, want 403", resp.StatusCode)
	}

	adm, err := madmin.NewWithOptions(user.Endpoint, &madmin.Options{Creds: credentials.NewStaticV4(user.AccessKey, user.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.AddUser(ctx, "intruder", "intruder-secret"); err == nil {
		t.Fatal("the scoped user created a user")
	}
	if _, err := adm.ListUsers(ctx); err == nil {
		t.Fatal("the scoped user listed users")
	}
}

// A new secret replaces the old one on the next run.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, user := scoped(t)
	rotated := user
	rotated.SecretKey = rand.Text()
	if _, err := provision.Run(ctx, provision.Config{Root: root, User: user.AccessKey, Secret: rotated.SecretKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, rotated).BucketExists(ctx, user.Bucket); err != nil {
		t.Fatalf("the new secret: %v", err)
	}
	_, err := client(t, user).BucketExists(ctx, user.Bucket)
	if err == nil {
		t.Fatal("the old secret still works")
	}
}

func TestPolicy(t *testing.T) {
	var doc struct {
		Statement []struct {
			Effect   string
			Action   []string
			Resource []string
		}
	}
	if err := json.Unmarshal(provision.Policy("b1"), &doc); err != nil {
		t.Fatal(err)
	}
	for _, st := range doc.Statement {
		if st.Effect != "Allow" {
			t.Fatalf("statement %+v", st)
		}
		for _, r := range st.Resource {
			if r != "arn:aws:s3:::b1" && r != "arn:aws:s3:::b1/*" {
				t.Fatalf("resource %q outside the bucket", r)
			}
		}
		for _, a := range st.Action {
			if strings.Contains(a, "*") || a == "s3:CreateBucket" || a == "s3:DeleteBucket" || a == "s3:ListAllMyBuckets" {
				t.Fatalf("action %q", a)
			}
		}
	}
}
