package docker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The kernel's event stream is shared with the user's code, which runs in the same
// process and can write any line to it, at any time, between runs too. So the worker
// reads it only while someone waits for an event (a run, an answer, the kernel's
// "ready"): between runs nothing is read or held, and a flood from a thread the code
// left running stops in the kernel's pipe, costing the worker nothing. Each line is
// bounded by what the waiter expects, and a longer one ends the stream (the kernel is
// then dropped, as when it dies).
const (
	// maxRunLine bounds one line of a run: a result's text (the driver keeps 1 MiB of
	// it, which JSON escaping can make a few times longer) or the run's "done", with
	// its error and its workspace listing. Stream text comes in chunks of 64 KiB.
	maxRunLine = 8 << 20
	// maxControlLine bounds the small answers: "ready", "wiped", "put".
	maxControlLine = 256 << 10
	// maxGotLine bounds a "got": inlineGetMax bytes of tar as base64, and the envelope.
	maxGotLine = 4*((inlineGetMax+2)/3) + 64<<10
)

// answerLimit is the longest line a waiter for answer expects.
func answerLimit(answer string) int {
	if answer == "got" {
		return maxGotLine
	}
	return maxControlLine
}

// listener is one waiter for the kernel's events: lines are read while it listens,
// each of at most limit bytes.
type listener struct {
	limit int
	done  chan struct{} // closed when it stops listening
}

// listen makes the decoder read the kernel's events, lines of at most limit bytes,
// for the caller, who takes them from k.events until it calls stop. One caller
// listens at a time (the sandbox's mutex serialises them).
func (k *kernel) listen(limit int) (stop func()) {
	l := &listener{limit: limit, done: make(chan struct{})}
	k.mu.Lock()
	k.ear = l
	k.mu.Unlock()
	select {
	case k.woken <- struct{}{}:
	default: // a wake-up is pending already
	}
	return func() {
		k.mu.Lock()
		if k.ear == l {
			k.ear = nil
		}
		k.mu.Unlock()
		close(l.done)
	}
}

// listener waits until someone listens, and returns it; nil once the kernel is closed.
func (k *kernel) listener() *listener {
	for {
		if l := k.current(); l != nil {
			return l
		}
		select {
		case <-k.woken:
		case <-k.closed:
			return nil
		}
	}
}

func (k *kernel) current() *listener {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ear
}

// decode turns the driver's stdout into events on k.events, while someone listens.
// It ends, closing k.events and r (so that whatever writes r ends too), when the
// stream ends, breaks, or the kernel is closed.
func (k *kernel) decode(r io.ReadCloser) {
	defer close(k.events)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		first := k.listener()
		if first == nil {
			return
		}
		// The line is for whoever listens when it is whole (one waiter may follow
		// another while it is read): bounded by what that one expects, or by what
		// the first expected if nobody listens any more.
		line, err := readLine(br, func() int {
			if l := k.current(); l != nil {
				return l.limit
			}
			return first.limit
		})
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				k.noteDiag("kernel stream: " + err.Error())
			}
			return
		}
		var ev wireEvent
		var typeErr *json.UnmarshalTypeError
		if err := json.Unmarshal(line, &ev); err != nil && !errors.As(err, &typeErr) {
			continue // not ours: the code wrote to the protocol descriptor
		}
		if !k.deliver(ev) {
			return
		}
	}
}

// deliver hands ev to whoever listens; false once the kernel is closed. With nobody
// listening, ev is dropped: nobody wants it (the code wrote it, or it is stale).
func (k *kernel) deliver(ev wireEvent) bool {
	for {
		l := k.current()
		if l == nil {
			return true
		}
		select {
		case k.events <- ev:
			return true
		case <-l.done: // that one left: the next one, if any, gets it
		case <-k.closed:
			return false
		}
	}
}

// readLine reads one newline-terminated line of at most limit() bytes.
func readLine(br *bufio.Reader, limit func() int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if max := limit(); len(line)+len(chunk) > max {
			return nil, fmt.Errorf("event line longer than %d bytes", max)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
