package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// A recyclable sandbox takes small inputs, and gives small outputs, through its
// kernel (the conformance suite's Recyclable/* subtests pin what they do; this pins
// that the kernel is the way they take): written, refused through a linked parent,
// read, and too large ones, or ones the kernel will not give, left to the helper.
func TestFilesInlineThroughTheKernel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	d := New(cli, Config{
		Image:  cmp.Or(os.Getenv("CODEINTERP_SANDBOX_IMAGE"), "codeinterp/sandbox:latest"),
		Prefix: "citest", Grace: time.Second, Runtime: os.Getenv("CODEINTERP_SANDBOX_RUNTIME"),
	})
	created, err := d.Create(ctx, sandbox.Spec{Owner: "test", Recyclable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = created.Remove(context.WithoutCancel(ctx)) })
	sb := created.(*Sandbox)

	file := func(name, body string) []sandbox.File {
		return []sandbox.File{{Name: name, Size: int64(len(body)), Body: strings.NewReader(body)}}
	}
	if done, err := sb.putInline(ctx, file("in/data.csv", "a,b\n1,2\n")); !done || err != nil {
		t.Fatalf("putInline: done %v, %v", done, err)
	}
	out, err := sb.Run(ctx, sandbox.Request{ID: "look", Code: `import os
os.symlink("/tmp", "tmplink")
print(open("in/data.csv").read(), end="")`, Timeout: 30 * time.Second}, nil)
	if err != nil || out.Stdout != "a,b\n1,2\n" {
		t.Fatalf("the code read %q (%+v, %v)", out.Stdout, out.Error, err)
	}
	if done, err := sb.putInline(ctx, file("tmplink/escaped.txt", "bad")); !done || !errors.Is(err, sandbox.ErrBadPath) {
		t.Fatalf("putInline through a linked parent: done %v, %v; want ErrBadPath", done, err)
	}
	if done, _ := sb.putInline(ctx, file("big.bin", strings.Repeat("x", inlinePutMax+1))); done {
		t.Fatal("an input past inlinePutMax went through the kernel")
	}

	out, err = sb.Run(ctx, sandbox.Request{ID: "write", Code: `open("outputs/small.txt", "w").write("small")
open("outputs/big.bin", "wb").write(b"x" * (5 << 20))`, Timeout: 30 * time.Second}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("write outputs: %+v, %v", out.Error, err)
	}
	readInline := func(name string) string {
		t.Helper()
		r, err := sb.readInline(ctx, []string{name}, sandbox.ReadLimits{})
		if err != nil || r == nil {
			return fmt.Sprintf("not through the kernel (%v)", err)
		}
		defer r.Close()
		info, body, err := r.next()
		if err != nil {
			return err.Error()
		}
		data, _ := io.ReadAll(body)
		return fmt.Sprintf("%s %d %s", info.Name, info.Size, data)
	}
	if got := readInline("outputs/small.txt"); got != "outputs/small.txt 5 small" {
		t.Fatalf("readInline(small.txt): %s", got)
	}
	if got := readInline("outputs/big.bin"); got != "not through the kernel (<nil>)" {
		t.Fatalf("an output past inlineGetMax: %.80s", got)
	}
	// After its run the kernel is the code's: one that will not give the files
	// leaves them to the helper, and ReadFiles still reads them.
	out, err = sb.Run(ctx, sandbox.Request{ID: "refuse", Code: `import sys
driver = sys.modules["__main__"]
driver.get = lambda req: driver.emit(ev="got", id=req.get("id"), ok=False, reason="no")`, Timeout: 30 * time.Second}, nil)
	if err != nil || out.Status != sandbox.Succeeded {
		t.Fatalf("patch the kernel: %+v, %v", out.Error, err)
	}
	if got := readInline("outputs/small.txt"); got != "not through the kernel (<nil>)" {
		t.Fatalf("a kernel that refused: %s", got)
	}
	var got string
	err = sb.ReadFiles(ctx, []string{"outputs/small.txt"}, sandbox.ReadLimits{}, func(_ sandbox.FileInfo, body io.Reader, err error) error {
		if err != nil {
			return err
		}
		b, err := io.ReadAll(body)
		got = string(b)
		return err
	})
	if err != nil || got != "small" {
		t.Fatalf("ReadFiles past a refusing kernel: %q, %v", got, err)
	}
}
