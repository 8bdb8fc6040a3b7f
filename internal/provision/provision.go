// Package provision prepares a MinIO server for codeinterp, with its root
// credentials: it creates the bucket (and its expiry rule) and a user whose policy
// allows that bucket's objects and nothing else, which the API, worker and janitor
// then run as. A leaked service credential, or a bug in a service, can then reach
// codeinterp's bucket but no other, cannot create buckets and cannot administer
// MinIO.
//
// Only the setup step (cmd/setup) uses it, so only that step holds the root
// credentials. It is idempotent: run it on every start. It knows nothing of
// executions, tenants or HTTP; the bucket's objects are the storage package's.
package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/minio/madmin-go/v3"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/codeinterp/codeinterp/storage"
)

// Config says what to provision.
type Config struct {
	// Root is the store's configuration with MinIO's root credentials.
	Root storage.Config
	// User and Secret are the credentials of the services' user, created or updated.
	User, Secret string
	// Skills, if its Bucket is set, is a second bucket (with the root credentials)
	// the user may use too: the skills', which has no expiry rule (Keep).
	Skills storage.Config
}

// Result says what Run did.
type Result struct {
	Bucket string
	Policy string // the name of the user's policy
	User   string
}

// Run creates or updates the bucket, the bucket's policy and the user, and attaches
// the policy to the user. A second run with the same Config changes nothing; a run
// with a new Secret changes the user's secret.
func Run(ctx context.Context, cfg Config) (Result, error) {
	store, err := storage.New(cfg.Root)
	if err != nil {
		return Result{}, err
	}
	if err := store.Init(ctx); err != nil {
		return Result{}, err
	}
	bucket := store.Bucket()
	buckets := []string{bucket}
	if cfg.Skills.Bucket != "" {
		skills, err := storage.New(cfg.Skills)
		if err != nil {
			return Result{}, err
		}
		if err := skills.Init(ctx); err != nil {
			return Result{}, err
		}
		buckets = append(buckets, skills.Bucket())
	}
	res := Result{Bucket: bucket, Policy: PolicyName(bucket), User: cfg.User}
	adm, err := madmin.NewWithOptions(cfg.Root.Endpoint, &madmin.Options{
		Creds: credentials.NewStaticV4(cfg.Root.AccessKey, cfg.Root.SecretKey, ""), Secure: cfg.Root.Secure,
	})
	if err != nil {
		return res, fmt.Errorf("minio admin client for %s: %w", cfg.Root.Endpoint, err)
	}
	if err := adm.AddCannedPolicy(ctx, res.Policy, Policy(buckets...)); err != nil {
		return res, fmt.Errorf("create policy %s: %w", res.Policy, err)
	}
	// Creates the user, or sets the secret and enables an existing one.
	if err := adm.AddUser(ctx, cfg.User, cfg.Secret); err != nil {
		return res, fmt.Errorf("create user %s: %w", cfg.User, err)
	}
	info, err := adm.GetUserInfo(ctx, cfg.User)
	if err != nil {
		return res, fmt.Errorf("read user %s: %w", cfg.User, err)
	}
	// MinIO refuses to attach a policy twice, so attach only when missing.
	if !slices.Contains(strings.Split(info.PolicyName, ","), res.Policy) {
		_, err := adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{res.Policy}, User: cfg.User})
		if err != nil {
			return res, fmt.Errorf("attach policy %s to %s: %w", res.Policy, cfg.User, err)
		}
	}
	return res, nil
}

// PolicyName is the name of the policy of bucket's user.
func PolicyName(bucket string) string { return "codeinterp-" + bucket }

// Policy is the IAM policy of the services' user: the buckets' objects, and of the
// buckets themselves what the services do (check them, list them for expiry sweeps,
// keep their expiry rules). No other bucket, no bucket creation, no listing of buckets.
func Policy(buckets ...string) []byte {
	type statement struct {
		Effect   string
		Action   []string
		Resource []string
	}
	doc := struct {
		Version   string
		Statement []statement
	}{
		Version: "2012-10-17",
		Statement: []statement{
			{
				Effect: "Allow",
				Action: []string{"s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads",
					"s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration"},
				Resource: arns(buckets, ""),
			},
			{
				Effect: "Allow",
				Action: []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject",
					"s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
				Resource: arns(buckets, "/*"),
			},
		},
	}
	b, _ := json.Marshal(doc) // a struct of strings always marshals
	return b
}

func arns(buckets []string, suffix string) []string {
	out := make([]string, len(buckets))
	for i, b := range buckets {
		out[i] = "arn:aws:s3:::" + b + suffix
	}
	return out
}
