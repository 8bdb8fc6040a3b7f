package records

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// Listing indexes hold execution ids with score 0, so they sort by id; ids are ULIDs,
// so that is creation order, and a page's cursor is simply the last id it showed.
// Indexes written before thread operations left them may still hold operation ids
// ("op_…", which sort above every "ex_…"): a listing reads only the execution ids'
// range, so those are never read, shown or handed out as cursors.

// ListOptions filters and pages [Store.List].
type ListOptions struct {
	Thread string      // only this thread's executions
	Status jobs.Status // only executions in this status
	Limit  int         // page size; default 20
	Cursor string      // the NextCursor of the previous page
}

// Bounds of one [Store.List] call.
const (
	// SummaryOutputBytes bounds a listed execution's stdout and stderr, each: longer
	// output is cut (at a character boundary) and flagged truncated.
	SummaryOutputBytes = 1 << 10
	// SummaryErrorBytes bounds a listed execution's error value and traceback, each.
	SummaryErrorBytes = 1 << 10
	// SummaryFiles bounds the files a listed execution shows: the first ones it made.
	SummaryFiles = 20

	// maxScan bounds how many index entries one List call reads (their status field
	// only): past it, a page comes back short with a cursor to go on from.
	maxScan = 2000
	// scanBatch is how many statuses one round trip reads while filtering.
	scanBatch = 250
	// loadBatch is how many records one round trip loads: each may be megabytes.
	loadBatch = 10
	// MaxPageBytes bounds the bytes of records one List call loads: past it, a page
	// comes back short (one record at least) with a cursor to go on from, so that a
	// burst of listings of large records cannot take the API's memory.
	MaxPageBytes = 8 << 20
)

// The range of execution ids in an index, in ZRANGEBYLEX syntax (ids are ASCII).
const (
	idsFrom = "[" + string(jobs.ExecutionPrefix)
	idsTo   = "(" + string(jobs.ExecutionPrefix) + "\xff"
)

// List returns a page of a tenant's executions, newest first, and the cursor of the
// next page ("" at the end). Ids whose records expired are dropped from the index on
// the way.
//
// Items are summaries, in the execution's own shape, so a page's size is bounded
// whatever the executions printed: stdout and stderr are cut to SummaryOutputBytes
// each (stdout_truncated and stderr_truncated say so), the error's value and
// traceback to SummaryErrorBytes each, rich results are left out (results_truncated
// says there were some) and files beyond the first SummaryFiles are dropped. GET one
// execution for all of it.
//
// With a status filter, statuses are read first (a few bytes each) and only the
// records that match are loaded; at most 2,000 entries are read per call, so a page
// may come back short, or empty, with a cursor to go on from. A page also stops
// before its records pass MaxPageBytes, with a cursor to go on from.
func (s *Store) List(ctx context.Context, tenant string, opt ListOptions) ([]*jobs.Execution, string, error) {
	index := s.tenantIndex(tenant)
	if opt.Thread != "" {
		index = s.threadIndex(jobs.NewThreadKey(tenant, opt.Thread))
	}
	opt.Limit = cmp.Or(opt.Limit, 20)
	ids, next, err := s.listIDs(ctx, index, opt)
	if err != nil {
		return nil, "", err
	}
	fit, err := s.fitting(ctx, ids, MaxPageBytes)
	if err != nil {
		return nil, "", err
	}
	if fit < len(ids) {
		ids, next = ids[:fit], ids[fit-1]
	}
	out := make([]*jobs.Execution, 0, len(ids))
	for chunk := range slices.Chunk(ids, loadBatch) {
		exs, err := s.loadMany(ctx, chunk)
		if err != nil {
			return nil, "", err
		}
		for _, ex := range exs {
			// A record that ended meanwhile no longer matches: it is left out.
			if ex == nil || ex.Tenant != tenant || ex.Kind != jobs.KindExecution || (opt.Status != "" && ex.Status != opt.Status) {
				continue
			}
			out = append(out, summary(ex))
		}
	}
	return out, next, nil
}

// listIDs returns the ids of the page's executions (matching opt.Status by their
// status field) and the next page's cursor.
func (s *Store) listIDs(ctx context.Context, index string, opt ListOptions) (ids []string, next string, err error) {
	upper := idsTo
	if opt.Cursor != "" {
		if !jobs.ExecutionPrefix.Of(opt.Cursor) {
			return nil, "", nil // not a cursor List made: no execution follows it
		}
		upper = "(" + opt.Cursor
	}
	batch := opt.Limit + 1
	if opt.Status != "" {
		batch = max(batch, scanBatch)
	}
	for scanned := 0; scanned < maxScan; {
		want := min(batch, maxScan-scanned)
		page, err := s.rdb.ZRevRangeByLex(ctx, index, &redis.ZRangeBy{Min: idsFrom, Max: upper, Count: int64(want)}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("list executions: %w", err)
		}
		statuses, err := s.statuses(ctx, page)
		if err != nil {
			return nil, "", err
		}
		var gone []any
		for i, id := range page {
			scanned++
			upper = "(" + id
			switch st := statuses[i]; {
			case st == "":
				gone = append(gone, id)
			case opt.Status == "" || st == string(opt.Status):
				if len(ids) == opt.Limit { // one more than the page: there is a next one
					return ids, ids[len(ids)-1], s.forget(ctx, index, gone)
				}
				ids = append(ids, id)
			}
		}
		if err := s.forget(ctx, index, gone); err != nil {
			return nil, "", err
		}
		if len(page) < want {
			return ids, "", nil // the index ended
		}
	}
	// The scan bound: the next page goes on after the last entry read.
	return ids, strings.TrimPrefix(upper, "("), nil
}

// fitting returns how many of ids, in order, have records of at most max bytes in
// all (one at least), reading their sizes in one round trip.
func (s *Store) fitting(ctx context.Context, ids []string, max int64) (int, error) {
	if len(ids) <= 1 {
		return len(ids), nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HStrLen(ctx, s.recordKey(id), "json")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("read execution sizes: %w", err)
	}
	var total int64
	for i, c := range cmds {
		if total += c.Val(); total > max && i > 0 {
			return i, nil
		}
	}
	return len(ids), nil
}

// statuses reads the status field of each record in one round trip: "" for a record
// that is gone.
func (s *Store) statuses(ctx context.Context, ids []string) ([]string, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.recordKey(id), "status")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read execution statuses: %w", err)
	}
	out := make([]string, len(ids))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// loadMany loads records in one round trip: nil for a record that is gone.
func (s *Store) loadMany(ctx context.Context, ids []string) ([]*jobs.Execution, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.recordKey(id), "json")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("load executions: %w", err)
	}
	out := make([]*jobs.Execution, len(ids))
	for i, c := range cmds {
		data, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		var ex jobs.Execution
		if err := json.Unmarshal(data, &ex); err != nil {
			return nil, fmt.Errorf("decode execution %s: %w", ids[i], err)
		}
		out[i] = &ex
	}
	return out, nil
}

// forget drops ids whose records expired from a listing index.
func (s *Store) forget(ctx context.Context, index string, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.rdb.ZRem(ctx, index, ids...).Err(); err != nil {
		return fmt.Errorf("drop expired executions from %s: %w", index, err)
	}
	return nil
}

// summary returns ex as a listing shows it: output and error cut, no rich results, at
// most SummaryFiles files (see [Store.List]). It copies what it keeps, so the full
// record can be freed.
func summary(ex *jobs.Execution) *jobs.Execution {
	sum := *ex
	var cut bool
	sum.Stdout, cut = clip(ex.Stdout, SummaryOutputBytes)
	sum.StdoutTruncated = ex.StdoutTruncated || cut
	sum.Stderr, cut = clip(ex.Stderr, SummaryOutputBytes)
	sum.StderrTruncated = ex.StderrTruncated || cut
	sum.Results, sum.ResultsTruncated = nil, ex.ResultsTruncated || len(ex.Results) > 0
	if ex.Error != nil {
		e := *ex.Error
		e.Value, _ = clip(e.Value, SummaryErrorBytes)
		e.Traceback, _ = clip(e.Traceback, SummaryErrorBytes)
		sum.Error = &e
	}
	sum.Files = slices.Clone(ex.Files[:min(len(ex.Files), SummaryFiles)])
	// What the API never shows of a record is not kept either.
	sum.Code, sum.Env, sum.Inputs = "", nil, nil
	return &sum
}

// clip returns a copy of s cut to at most n bytes, never inside a UTF-8 sequence, and
// whether it cut.
func clip(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n]), true
}
