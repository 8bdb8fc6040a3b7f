package records_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// The end-of-execution and cancel subscriptions start while Redis is down, connect
// once it answers, and subscribe again after it crashed and came back.
func TestSubscriptionsOutliveRedisOutages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := testenv.NewOwnRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr})
	t.Cleanup(func() { rdb.Close() })
	r := records.New(rdb, records.Config{Prefix: "t:", TTL: time.Hour, Threads: threadq.New(rdb, threadq.Config{Prefix: "t:"})})

	w := r.NewWaiter()
	if err := w.Start(ctx); err != nil {
		t.Fatalf("waiter start while Redis is down: %v", err)
	}
	t.Cleanup(w.Shutdown)
	cancels, err := r.SubscribeCancels(ctx)
	if err != nil {
		t.Fatalf("cancel subscription while Redis is down: %v", err)
	}
	t.Cleanup(func() { cancels.Close() })
	canceled := make(chan string, 16)
	go cancels.Each(func(id string) { canceled <- id })

	for round := range 2 {
		own.Start(t)
		subscribed(t, rdb, "t:done", "t:cancel")
		ex := &jobs.Execution{ID: fmt.Sprintf("ex_%d", round), Tenant: "acme", Status: jobs.Queued}
		if _, err := r.Create(ctx, ex, "", ""); err != nil {
			t.Fatal(err)
		}
		ex.Status = jobs.Running
		if ok, _, err := r.Transition(ctx, ex, jobs.Queued); !ok || err != nil {
			t.Fatalf("start: %v %v", ok, err)
		}
		if _, err := r.Cancel(ctx, "acme", ex.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-canceled:
			if id != ex.ID {
				t.Fatalf("round %d: cancel of %s, want %s", round, id, ex.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the cancel request never arrived", round)
		}
		done, stop := w.Watch(ex.ID)
		ex.Status = jobs.Canceled
		if ok, _, err := r.Transition(ctx, ex, jobs.Running); !ok || err != nil {
			t.Fatalf("end: %v %v", ok, err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the end was never announced", round)
		}
		stop()
		own.Kill(t)
	}
}

// subscribed waits until Redis has a subscriber on each channel.
func subscribed(t *testing.T, rdb *redis.Client, channels ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := rdb.PubSubChannels(context.Background(), "*").Result()
		if err == nil && !slices.ContainsFunc(channels, func(c string) bool { return !slices.Contains(got, c) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribed channels: %v (%v); want %v", got, err, channels)
		}
		<-tick.C
	}
}
