package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Listing indexes hold execution ids with score 0, so they sort by id; ids are ULIDs,
// so that is creation order, and a page's cursor is simply the last id it showed.

// ListOptions filters and pages [Records.List].
type ListOptions struct {
	Thread string // only this thread's executions
	Status Status // only executions in this status
	Limit  int    // page size
	Cursor string // the NextCursor of the previous page
}

// maxScan bounds how many records one List call reads while filtering by status.
const maxScan = 1000

// List returns a tenant's executions, newest first, and the cursor of the next page
// ("" at the end). Ids whose records expired are dropped from the index on the way.
func (r *Records) List(ctx context.Context, tenant string, opt ListOptions) ([]*Execution, string, error) {
	index := r.tenantIndex(tenant)
	if opt.Thread != "" {
		index = r.thread(ThreadKey(tenant, opt.Thread), "ex")
	}
	max := "+"
	if opt.Cursor != "" {
		max = "(" + opt.Cursor
	}
	var out []*Execution
	for scanned := 0; scanned < maxScan; {
		ids, err := r.rdb.ZRevRangeByLex(ctx, index, &redis.ZRangeBy{Min: "-", Max: max, Count: int64(opt.Limit + 1)}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("list executions: %w", err)
		}
		for _, id := range ids {
			scanned++
			max = "(" + id
			ex, err := r.Get(ctx, tenant, id)
			if err == ErrNotFound {
				r.rdb.ZRem(ctx, index, id)
				continue
			}
			if err != nil {
				return nil, "", err
			}
			if ex.Kind != KindExecution || (opt.Status != "" && ex.Status != opt.Status) {
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
