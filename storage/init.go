package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/lifecycle"
)

// Init creates the bucket if needed and sets its expiry rule: objects are deleted
// once older than the retention period (rounded up to whole days, S3's unit); with
// Config.Keep, never. It is idempotent and safe to run from several processes at once.
func (s *Store) Init(ctx context.Context) error {
	exists, err := s.cli.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("check bucket %s: %w", s.cfg.Bucket, err)
	}
	if !exists {
		err := s.cli.MakeBucket(ctx, s.cfg.Bucket, minio.MakeBucketOptions{Region: s.cfg.Region})
		if err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			return fmt.Errorf("create bucket %s: %w", s.cfg.Bucket, err)
		}
	}
	if s.cfg.Keep {
		if err := s.cli.SetBucketLifecycle(ctx, s.cfg.Bucket, lifecycle.NewConfiguration()); err != nil {
			return fmt.Errorf("remove lifecycle of %s: %w", s.cfg.Bucket, err)
		}
		return nil
	}
	days := int((s.cfg.Retention + 24*time.Hour - 1) / (24 * time.Hour))
	rules := lifecycle.NewConfiguration()
	rules.Rules = []lifecycle.Rule{{
		ID:         "codeinterp-retention",
		Status:     "Enabled",
		RuleFilter: lifecycle.Filter{Prefix: ""},
		Expiration: lifecycle.Expiration{Days: lifecycle.ExpirationDays(days)},
	}}
	if err := s.cli.SetBucketLifecycle(ctx, s.cfg.Bucket, rules); err != nil {
		return fmt.Errorf("set lifecycle on %s: %w", s.cfg.Bucket, err)
	}
	return nil
}
