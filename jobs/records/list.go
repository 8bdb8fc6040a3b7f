package records

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Listing indexes hold execution ids with score 0, so they sort by id; ids are ULIDs,
// so that is creation order, and a page's cursor is simply the last id it showed.

// ListOptions filters and pages [Store.List].
type ListOptions struct {
	Thread string      // only this thread's executions
	Status jobs.Status // only executions in this status
	Limit  int         // page size
	Cursor string      // the NextCursor of the previous page
}

// maxScan bounds how many records one List call reads while filtering by status.
const maxScan = 1000

// List returns a tenant's executions, newest first, and the cursor of the next page
// ("" at the end). Ids whose records expired are dropped from the index on the way.
func (s *Store) List(ctx context.Context, tenant string, opt ListOptions) ([]*jobs.Execution, string, error) {
	index := s.tenantIndex(tenant)
	if opt.Thread != "" {
		index = s.threadIndex(jobs.NewThreadKey(tenant, opt.Thread))
	}
	max := "+"
	if opt.Cursor != "" {
		max = "(" + opt.Cursor
	}
	var out []*jobs.Execution
	for scanned := 0; scanned < maxScan; {
		ids, err := s.rdb.ZRevRangeByLex(ctx, index, &redis.ZRangeBy{Min: "-", Max: max, Count: int64(opt.Limit + 1)}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("list executions: %w", err)
		}
		for _, id := range ids {
			scanned++
			max = "(" + id
			ex, err := s.Get(ctx, tenant, id)
			if err == ErrNotFound {
				s.rdb.ZRem(ctx, index, id)
				continue
			}
			if err != nil {
				return nil, "", err
			}
			if ex.Kind != jobs.KindExecution || (opt.Status != "" && ex.Status != opt.Status) {
				continue
			}
			if len(out) == opt.Limit {
				return out, out[len(out)-1].ID, nil
			}
			out = append(out, ex)
		}
		if len(ids) <= opt.Limit {
			return out, "", nil
		}
	}
	return out, strings.TrimPrefix(max, "("), nil
}
