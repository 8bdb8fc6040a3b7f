package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/codeinterp/codeinterp/sandbox"
)

// ReadFiles reads, in the order named, what its limits admit and says why it left
// out the rest, with the size of a file too large; a large file (past any shortcut a
// runtime takes for small ones) reads whole.
func testReadFiles(t *testing.T, b bundle) {
	ctx := context.Background()
	sb := b.sandbox(t)
	wantStatus(t, run(t, sb, py(`import os
os.makedirs("outputs", exist_ok=True)
open("outputs/a.txt", "w").write("a" * 10)
open("outputs/b.txt", "w").write("b" * 100)
open("outputs/c.txt", "w").write("c" * 30)
open("outputs/big.bin", "wb").write(bytes(range(256)) * 24576)  # 6 MiB`)), sandbox.Succeeded)

	read := func(limits sandbox.ReadLimits, names ...string) string {
		t.Helper()
		var got []string
		err := sb.ReadFiles(ctx, names, limits, func(info sandbox.FileInfo, body io.Reader, err error) error {
			switch {
			case errors.Is(err, sandbox.ErrTooLarge):
				got = append(got, fmt.Sprintf("%s %d toolarge", info.Name, info.Size))
			case errors.Is(err, sandbox.ErrNoFile):
				got = append(got, info.Name+" nofile")
			case err != nil:
				got = append(got, fmt.Sprintf("%s %v", info.Name, err))
			default:
				data, err := io.ReadAll(body)
				if err != nil {
					return err
				}
				if int64(len(data)) != info.Size {
					return fmt.Errorf("%s: %d bytes, info says %d", info.Name, len(data), info.Size)
				}
				got = append(got, fmt.Sprintf("%s %d %s", info.Name, info.Size, data))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ReadFiles(%v): %v", names, err)
		}
		return strings.Join(got, "|")
	}
	a, c := strings.Repeat("a", 10), strings.Repeat("c", 30)
	if got, want := read(sandbox.ReadLimits{Each: 50, Total: 45}, "outputs/a.txt", "outputs/missing.txt", "outputs/b.txt", "outputs/c.txt"),
		"outputs/a.txt 10 "+a+"|outputs/missing.txt nofile|outputs/b.txt 100 toolarge|outputs/c.txt 30 "+c; got != want {
		t.Fatalf("with Each 50, Total 45:\n got %q\nwant %q", got, want)
	}
	if got, want := read(sandbox.ReadLimits{Total: 35}, "outputs/a.txt", "outputs/c.txt", "outputs/a.txt"),
		"outputs/a.txt 10 "+a+"|outputs/c.txt 30 toolarge|outputs/a.txt 10 "+a; got != want {
		t.Fatalf("with Total 35:\n got %q\nwant %q", got, want)
	}

	var big []byte
	err := sb.ReadFiles(ctx, []string{"outputs/a.txt", "outputs/big.bin"}, sandbox.ReadLimits{}, func(info sandbox.FileInfo, body io.Reader, err error) error {
		if err != nil {
			return err
		}
		if info.Name == "outputs/big.bin" {
			big, err = io.ReadAll(body)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat(func() []byte {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}(), 24576); !bytes.Equal(big, want) {
		t.Fatalf("big.bin: read %d bytes, not the %d written", len(big), len(want))
	}
}
