package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
)

// DeletePrefix deletes every object whose key starts with prefix and returns how many.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	return s.deleteWhere(ctx, prefix, func(minio.ObjectInfo) bool { return true })
}

// DeleteBefore deletes the objects under prefix last modified before t: the sweep
// behind the bucket's lifecycle rule, which S3 applies only about once a day.
func (s *Store) DeleteBefore(ctx context.Context, prefix string, t time.Time) (int, error) {
	return s.deleteWhere(ctx, prefix, func(o minio.ObjectInfo) bool { return o.LastModified.Before(t) })
}

func (s *Store) deleteWhere(ctx context.Context, prefix string, match func(minio.ObjectInfo) bool) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		n       int
		listErr error
		doomed  = make(chan minio.ObjectInfo)
	)
	go func() {
		defer close(doomed)
		for obj := range s.cli.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if obj.Err != nil {
				listErr = obj.Err
				return
			}
			if !match(obj) {
				continue
			}
			select {
			case doomed <- obj:
				n++
			case <-ctx.Done():
				return
			}
		}
	}()
	// RemoveObjects reads doomed until it is closed, so n and listErr are final below.
	for res := range s.cli.RemoveObjects(ctx, s.cfg.Bucket, doomed, minio.RemoveObjectsOptions{}) {
		if res.Err != nil {
			return 0, fmt.Errorf("delete %s: %w", res.ObjectName, res.Err)
		}
	}
	if listErr != nil {
		return 0, fmt.Errorf("list %s: %w", prefix, listErr)
	}
	return n, nil
}
