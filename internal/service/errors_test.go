package service

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Outage tells the errors of a Redis that cannot serve now from every other error.
// Each error is the one the real client returns: it talks to a fake server that
// answers every command with the reply under test (a real Redis answering LOADING is
// in internal/e2e's TestRedisOutage).
func TestOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		outage  bool
		message string
	}{
		{"loading", replyErr(t, "-LOADING Redis is loading the dataset in memory"), true, "loading its data"},
		{"full", replyErr(t, "-OOM command not allowed when used memory > 'maxmemory'."), true, "full"},
		{"replica", replyErr(t, "-READONLY You can't write against a read only replica."), true, "unreachable"},
		{"master down", replyErr(t, "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true, "unreachable"},
		{"refused", refusedErr(t), true, "unreachable"},
		{"closed mid-command", closedErr(t), true, "unreachable"},
		{"wrapped", fmt.Errorf("load record: %w", replyErr(t, "-LOADING Redis is loading the dataset in memory")), true, "loading its data"},
		{"a bug", replyErr(t, "-WRONGTYPE Operation against a key holding the wrong kind of value"), false, ""},
		{"a script error", replyErr(t, "-ERR user_script:1: attempt to compare nil with number"), false, ""},
		{"other", errors.New("boom"), false, ""},
		{"canceled", context.Canceled, false, ""},
		{"nil", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Outage(tc.err)
			if (got != nil) != tc.outage {
				t.Fatalf("Outage(%v) = %v, want an outage: %v", tc.err, got, tc.outage)
			}
			if got != nil && (got.Code != CodeUnavailable || got.RetryAfter < 1 || !strings.Contains(got.Message, tc.message)) {
				t.Fatalf("Outage(%v) = %+v; want unavailable, Retry-After, a message saying %q", tc.err, got, tc.message)
			}
			if got != nil && strings.Contains(got.Message, "127.0.0.1") {
				t.Fatalf("the message shows an internal address: %s", got.Message)
			}
		})
	}
}

// replyErr returns the error the client makes of a server that answers every command
// with reply.
func replyErr(t *testing.T, reply string) error {
	t.Helper()
	addr := fakeServer(t, func(c net.Conn) {
		rd := bufio.NewReader(c)
		for {
			if _, err := readCommand(rd); err != nil {
				return
			}
			if _, err := c.Write([]byte(reply + "\r\n")); err != nil {
				return
			}
		}
	})
	return get(t, addr)
}

// refusedErr returns the error of a client whose server does not listen.
func refusedErr(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return get(t, addr)
}

// closedErr returns the error of a client whose server closes the connection when a
// command arrives, as a Redis going down does.
func closedErr(t *testing.T) error {
	t.Helper()
	return get(t, fakeServer(t, func(c net.Conn) {
		_, _ = readCommand(bufio.NewReader(c))
	}))
}

func get(t *testing.T, addr string) error {
	t.Helper()
	// Protocol 2 skips the HELLO handshake; one try, so a refusal is not retried.
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := rdb.Get(ctx, "k").Err()
	if err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("the fake server at %s gave no error: %v", addr, err)
	}
	return err
}

// fakeServer serves each connection with serve until the test ends.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

// readCommand reads one RESP command (an array of bulk strings).
func readCommand(rd *bufio.Reader) ([]string, error) {
	var n int
	if _, err := fmt.Fscanf(rd, "*%d\r\n", &n); err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		var size int
		if _, err := fmt.Fscanf(rd, "$%d\r\n", &size); err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}
