package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

// The hammer: many threads, many executions, several worker processes, and workers
// SIGKILLed at random moments. From the logs the sandboxes themselves wrote, every
// thread's executions started in the order accepted, never overlapped, none was lost,
// and none ran twice; the ones a dead worker had in flight say so.
//
// It is not parallel: it loads the machine on its own, before the parallel tests run.
func TestHammerThreadsUnderWorkerKills(t *testing.T) {
	const threads, each, workers, maxKills = 20, 20, 3, 6
	s := newStack(t, stackOptions{noWorkers: true})
	bin := buildWorker(t)
	var mu sync.Mutex
	procs := make([]*workerProcess, workers)
	next := 0
	for i := range procs {
		procs[i] = s.startWorkerProcess(t, bin, fmt.Sprintf("hammer-%d", next))
		next++
	}

	ids := make([][]string, threads)
	var submit sync.WaitGroup
	for th := range threads {
		submit.Go(func() {
			for i := range each {
				code := fmt.Sprintf("import os, time, random\n"+
					"with open('log.txt', 'a') as f:\n"+
					"    f.write('start %d %%d\\n' %% os.getpid()); f.flush()\n"+
					"    time.sleep(%g + random.random() * 0.05)\n"+
					"    f.write('end %d\\n')", i, 1.5*float64(i%5/4), i)
				ids[th] = append(ids[th], s.submit(t, "key-a", map[string]any{"thread_id": fmt.Sprintf("h%02d", th), "code": code}))
			}
		})
	}

	submit.Wait()
	// Kill workers at random moments while the executions run, replacing each. Every
	// other kill hits the worker of a running execution, so dying mid-run is exercised.
	stopKilling := make(chan struct{})
	killed := make(chan int)
	go func() {
		n := 0
		defer func() { killed <- n }()
		for n < maxKills {
			select {
			case <-stopKilling:
				return
			// Long enough apart for the survivors to adopt the dead worker's threads
			// (each adoption starts a kernel that imports pandas and matplotlib).
			case <-time.After(time.Duration(2000+rand.IntN(2000)) * time.Millisecond):
			}
			target := ""
			if n%2 == 0 {
				target = s.workerOfARunningExecution(t, ids)
			}
			mu.Lock()
			i := rand.IntN(workers)
			for j, p := range procs {
				if strings.HasPrefix(target, p.id+"-") { // worker ids get a per-process suffix
					i = j
				}
			}
			_ = procs[i].cmd.Process.Signal(syscall.SIGKILL)
			procs[i] = s.startWorkerProcess(t, bin, fmt.Sprintf("hammer-%d", next))
			next++
			n++
			mu.Unlock()
		}
	}()

	lost := 0
	for th := range threads {
		for _, id := range ids[th] {
			ex := s.wait(t, id)
			switch {
			case ex.Status == "succeeded":
			case ex.Status == "failed" && ex.Error != nil && ex.Error.Name == "WorkerLost":
				lost++
			default:
				t.Errorf("thread h%02d %s: %s %+v", th, id, ex.Status, ex.Error)
			}
		}
	}
	close(stopKilling)
	kills := <-killed
	t.Logf("%d executions, %d workers killed, %d executions ended WorkerLost", threads*each, kills, lost)
	if kills < 3 || lost == 0 {
		t.Errorf("%d workers killed, %d executions lost in flight: the test proves little", kills, lost)
	}

	for th := range threads {
		log := s.threadFile(t, fmt.Sprintf("h%02d", th), "log.txt")
		checkThreadLog(t, th, log, ids[th], s)
	}
}

// workerOfARunningExecution returns the worker running one of ids, looking for up to
// a minute (on a loaded machine most items wait for a slot, or for a kernel that
// adopts a dead worker's thread), or "".
func (s *stack) workerOfARunningExecution(t *testing.T, ids [][]string) string {
	ctx := context.Background()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); <-tick.C {
		for _, th := range rand.Perm(len(ids)) {
			st, _ := s.threads.State(ctx, jobs.NewThreadKey("acme", fmt.Sprintf("h%02d", th)))
			if st.Inflight == "" {
				continue
			}
			if ex, err := s.records.Get(ctx, "", st.Inflight); err == nil && ex.Status == jobs.Running {
				return ex.Worker
			}
		}
	}
	return ""
}

// checkThreadLog checks one thread's log against its records.
func checkThreadLog(t *testing.T, th int, log string, ids []string, s *stack) {
	t.Helper()
	started := map[int]int{}
	ended := map[int]bool{}
	last, open := -1, -1
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "start":
			if n <= last {
				t.Errorf("thread h%02d: %d started after %d: out of order or run twice\n%s", th, n, last, log)
			}
			started[n]++
			last, open = n, n
		case "end":
			if open != n {
				t.Errorf("thread h%02d: end %d while %d was running: overlap\n%s", th, n, open, log)
			}
			ended[n] = true
			open = -1
		}
	}
	for i, id := range ids {
		var ex execution
		s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		switch {
		case started[i] > 1:
			t.Errorf("thread h%02d: execution %d ran %d times", th, i, started[i])
		case ex.Status == "succeeded" && (!ended[i] || started[i] != 1):
			t.Errorf("thread h%02d: execution %d succeeded but its log shows started=%d ended=%v", th, i, started[i], ended[i])
		}
	}
}

// threadFile reads a file from a thread's workspace through the API.
func (s *stack) threadFile(t *testing.T, thread, name string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/threads/"+thread+"/files/"+name+"?inline=1", nil)
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("read %s of %s: %d %s", name, thread, resp.StatusCode, b)
	}
	return string(b)
}
