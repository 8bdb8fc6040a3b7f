package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// run is `codeinterp run`: it uploads the input files, submits the script, streams its
// output live, downloads what it produced and exits with its status.
func run(ctx context.Context, c *client.Client, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	thread := fs.String("thread", "", "thread id: run in the thread's warm sandbox")
	out := fs.String("out", "", "directory to download produced files into")
	lang := fs.String("lang", "", "python or bash (default: from the script's extension)")
	timeout := fs.Duration("timeout", 0, "execution timeout (default: the service's)")
	profile := fs.String("profile", "", "sandbox profile (default: the thread's, else your default; see GET /v1/runtimes)")
	var files, env multi
	fs.Var(&files, "file", "input file PATH[:NAME], repeatable (NAME: where under /workspace)")
	fs.Var(&env, "env", "environment variable K=V, repeatable")
	if len(args) == 0 {
		return fmt.Errorf("%w: run needs a script", errUsage)
	}
	script, rest := args[0], args[1:]
	if err := fs.Parse(rest); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: run %s: bad arguments", errUsage, script)
	}
	code, err := os.ReadFile(script)
	if err != nil {
		return err
	}
	req := client.RunRequest{ThreadID: *thread, Code: string(code), Language: *lang, Profile: *profile, TimeoutMS: int(timeout.Milliseconds())}
	if req.Language == "" && (strings.HasSuffix(script, ".sh") || strings.HasSuffix(script, ".bash")) {
		req.Language = "bash"
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%w: --env %q: want K=V", errUsage, kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	for _, spec := range files {
		in, err := upload(ctx, c, spec)
		if err != nil {
			return err
		}
		req.Files = append(req.Files, in)
	}

	ex, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	progress("%s queued", ex.ID)
	final, err := c.Stream(ctx, ex.ID, func(ev client.Event) error {
		switch ev.Type {
		case "stdout":
			fmt.Fprint(os.Stdout, ev.Text())
		case "stderr":
			fmt.Fprint(os.Stderr, ev.Text())
		case "status":
			var s struct{ Status string }
			_ = decode(ev, &s)
			if s.Status == "running" {
				progress("%s running", ex.ID)
			}
		}
		return nil
	})
	if errors.Is(err, context.Canceled) {
		// Interrupted at the terminal: cancel the execution too.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.Cancel(cctx, ex.ID)
		return exitError{130}
	}
	if err != nil {
		return err
	}
	if final.Error != nil && final.Status != "succeeded" {
		fmt.Fprintf(os.Stderr, "%s: %s\n%s", final.Error.Name, final.Error.Value, final.Error.Traceback)
	}
	for _, r := range final.Results {
		if r.Type == "text/plain" {
			fmt.Fprintln(os.Stdout, r.Text)
		}
	}
	if *out != "" {
		if err := download(ctx, c, final, *out); err != nil {
			return err
		}
	}
	progress("%s %s in %s", final.ID, final.Status, duration(final))
	return exitError{exitCode(final)}
}

func upload(ctx context.Context, c *client.Client, spec string) (client.InputFile, error) {
	local, name, _ := strings.Cut(spec, ":")
	if name == "" {
		name = filepath.Base(local)
	}
	f, err := os.Open(local)
	if err != nil {
		return client.InputFile{}, err
	}
	defer f.Close()
	up, err := c.Upload(ctx, name, f)
	if err != nil {
		return client.InputFile{}, fmt.Errorf("upload %s: %w", local, err)
	}
	return client.InputFile{Name: name, Object: up.Object}, nil
}

// download saves the produced files under dir, keeping their workspace paths
// (outputs/chart.png becomes dir/outputs/chart.png).
func download(ctx context.Context, c *client.Client, ex *client.Execution, dir string) error {
	for _, f := range ex.Files {
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("refusing to write %s outside %s", f.Name, dir)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		w, err := os.Create(dst)
		if err != nil {
			return err
		}
		err = c.Download(ctx, f.URL, w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("download %s: %w", f.Name, err)
		}
		progress("saved %s (%d bytes)", dst, f.Size)
	}
	return nil
}

func exitCode(ex *client.Execution) int {
	switch ex.Status {
	case "succeeded":
		return 0
	case "timed_out":
		return 124
	case "canceled":
		return 130
	}
	if ex.ExitCode != nil && *ex.ExitCode > 0 && *ex.ExitCode < 124 {
		return *ex.ExitCode
	}
	return 1
}

func duration(ex *client.Execution) string {
	if ex.DurationMS == nil {
		return "-"
	}
	return (time.Duration(*ex.DurationMS) * time.Millisecond).String()
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "codeinterp: "+format+"\n", args...)
}
