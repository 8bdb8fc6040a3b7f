// Command codeinterp is the command line of codeinterp.
//
//	codeinterp run script.py [--thread t1] [--file data.csv[:name]]... [--out ./results]
//	codeinterp threads ls | rm <thread>
//	codeinterp files put <thread> <local file> [<workspace path>]
//	codeinterp files get <thread> <workspace path> [<local file>]
//	codeinterp exec get <id> | cancel <id>
//	codeinterp mcp   (an MCP server on stdio, relayed to the service's /mcp)
//
// The API is CODEINTERP_URL (default http://localhost:8080) with CODEINTERP_API_KEY,
// or --url and --api-key before the command. `run` exits with the execution's status:
// 0 succeeded, the code's exit code (or 1) if it failed, 124 timed out, 130 canceled;
// 2 is a usage error, 3 a failure to talk to the service.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/codeinterp/codeinterp/client"
)

const usage = `usage: codeinterp [--url URL] [--api-key KEY] <command> ...

commands:
  run <script> [--thread ID] [--file PATH[:NAME]]... [--out DIR] [--lang python|bash]
               [--timeout 30s] [--env K=V]...   run a script, streaming its output
  threads ls                                     list threads
  threads rm <thread>                            delete a thread's sandbox and workspace
  files put <thread> <local> [<path>]            put a file into a thread's workspace
  files get <thread> <path> [<local>]            get a file from a thread's workspace
  exec get <id>                                  show an execution (JSON)
  exec cancel <id>                               cancel an execution
  mcp                                            serve MCP on stdin/stdout, relayed to URL/mcp:
                                                 for agent hosts that launch MCP servers

environment: CODEINTERP_URL (default http://localhost:8080), CODEINTERP_API_KEY
`

// exitError carries an exit status up to main.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	global := flag.NewFlagSet("codeinterp", flag.ContinueOnError)
	global.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	url := global.String("url", cmp.Or(os.Getenv("CODEINTERP_URL"), "http://localhost:8080"), "API base URL")
	key := global.String("api-key", os.Getenv("CODEINTERP_API_KEY"), "API key")
	if err := global.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if args := global.Args(); len(args) > 0 && args[0] == "mcp" {
		err = runMCP(ctx, *url, *key, args[1:])
	} else {
		err = dispatch(ctx, client.New(*url, *key), args)
	}
	var exit exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(exit.code)
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "codeinterp: %v\n\n%s", err, usage)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "codeinterp:", err)
		os.Exit(3)
	}
}

var errUsage = errors.New("usage")

func dispatch(ctx context.Context, c *client.Client, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	switch {
	case args[0] == "run":
		return run(ctx, c, args[1:])
	case args[0] == "threads" && sub == "ls":
		return threadsList(ctx, c)
	case args[0] == "threads" && sub == "rm" && len(args) == 3:
		return c.DeleteThread(ctx, args[2])
	case args[0] == "files" && sub == "put" && (len(args) == 4 || len(args) == 5):
		return filePut(ctx, c, args[2:])
	case args[0] == "files" && sub == "get" && (len(args) == 4 || len(args) == 5):
		return fileGet(ctx, c, args[2:])
	case args[0] == "exec" && sub == "get" && len(args) == 3:
		return execGet(ctx, c, args[2])
	case args[0] == "exec" && sub == "cancel" && len(args) == 3:
		return execCancel(ctx, c, args[2])
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args)
}
