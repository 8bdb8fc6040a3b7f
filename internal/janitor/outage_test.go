package janitor_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// After Redis was out of the janitor's reach, every worker's heartbeat is stale for
// that reason alone: the janitor removes no live worker's sandbox, and removes a dead
// one's once a heartbeat TTL has passed since Redis answered again.
func TestOrphansWaitAfterRedisOutage(t *testing.T) {
	t.Parallel()
	own := testenv.NewOwnRedis(t)
	own.Start(t)
	e := newEnvOn(t, redis.NewClient(&redis.Options{Addr: own.Addr}))
	eventuallyUp(t, e)
	e.beat("w-live")
	sb, err := e.fake.Create(e.ctx, sandbox.Spec{Tenant: "acme", Owner: "w-live"})
	if err != nil {
		t.Fatal(err)
	}
	name := sb.(*sandboxtest.FakeSandbox).Name()
	e.clock.Advance(orphanAge)
	e.beat("w-live")
	j := e.janitor("janitor-1")
	noOrphanWork(t, j.Sweep(e.ctx)) // w-live is alive

	own.Kill(t)
	noOrphanWork(t, j.Sweep(e.ctx)) // Redis is down
	own.Start(t)
	eventuallyUp(t, e)
	// The outage outlasted w-live's heartbeat TTL; w-live beats again within a third
	// of it, but this sweep comes first.
	e.clock.Advance(heartbeatTTL + time.Second)
	noOrphanWork(t, j.Sweep(e.ctx))
	e.clock.Advance(heartbeatTTL / 3)
	e.beat("w-live")
	e.clock.Advance(heartbeatTTL - heartbeatTTL/3)
	noOrphanWork(t, j.Sweep(e.ctx))
	if !e.exists(name) {
		t.Fatal("a live worker's sandbox was removed after the outage")
	}
	// w-live never beats again: it is dead, and its sandbox goes.
	e.clock.Advance(heartbeatTTL + time.Second)
	if rep := j.Sweep(e.ctx); rep.OrphansRemoved != 1 || e.exists(name) {
		t.Fatalf("the dead worker's sandbox: removed %d, still there %v", rep.OrphansRemoved, e.exists(name))
	}
}

// eventuallyUp waits until Redis has loaded its data and answers.
func eventuallyUp(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for err := e.rdb.Ping(e.ctx).Err(); err != nil; err = e.rdb.Ping(e.ctx).Err() {
		if time.Now().After(deadline) {
			t.Fatalf("redis: %v", err)
		}
		<-tick.C
	}
}
