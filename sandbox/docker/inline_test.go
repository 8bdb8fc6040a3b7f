package docker

import (
	"cmp"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/codeinterp/codeinterp/sandbox"
)

// A recyclable sandbox takes small inputs through its kernel (the conformance suite's
// Recyclable/* subtests pin what they do; this pins that the kernel is the way they
// take): written, refused through a linked parent, and too large ones left to the
// helper.
func TestPutInlineThroughTheKernel(t *testing.T) {
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
}
