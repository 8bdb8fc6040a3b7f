package threadq

import "github.com/codeinterp/codeinterp/jobs"

// Every Redis key of the queue, under the configured prefix P:
//
//	P t:<tenant>/<thread>:q         list of the thread's queued item ids, in order
//	P t:<tenant>/<thread>:own       hash: worker, token = the owner and its lease's fencing token
//	P t:<tenant>/<thread>:fence     the last fencing token given to a claim of the thread
//	P t:<tenant>/<thread>:inflight  the item the owner took and has not finished
//	P workers                       zset of workers by last heartbeat (ms)
//	P workers:ready                 the same, for workers whose runtime answers
//	P owned:<worker>                set of the thread keys a worker owns
//	P wake:<worker>                 list: threads whose owner should look at its queue
//	P offers                        list: threads offered to any worker with a free slot
//	P unowned                       zset: threads waiting for an owner, by when offered
//
// bury.lua builds a dead worker's thread keys itself from threadPrefix, so the layout
// of the per-thread keys must stay "<threadPrefix><thread key>:<what>".

func (q *Queue) thread(tk jobs.ThreadKey, what string) string {
	return q.threadPrefix() + string(tk) + ":" + what
}
func (q *Queue) threadPrefix() string          { return q.prefix + "t:" }
func (q *Queue) workersKey() string            { return q.prefix + "workers" }
func (q *Queue) readyKey() string              { return q.prefix + "workers:ready" }
func (q *Queue) ownedPrefix() string           { return q.prefix + "owned:" }
func (q *Queue) ownedKey(worker string) string { return q.ownedPrefix() + worker }
func (q *Queue) wakePrefix() string            { return q.prefix + "wake:" }
func (q *Queue) wakeKey(worker string) string  { return q.wakePrefix() + worker }
func (q *Queue) offersKey() string             { return q.prefix + "offers" }
func (q *Queue) unownedKey() string            { return q.prefix + "unowned" }
