package main

import (
	"context"
	encjson "encoding/json"
	"fmt"
	"os"
	"path"
	"text/tabwriter"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// decode reads the JSON data of an event.
func decode(ev client.Event, v any) error { return encjson.Unmarshal(ev.Data, v) }

func threadsList(ctx context.Context, c *client.Client) error {
	threads, err := c.Threads(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "THREAD\tLAST ACTIVE")
	for _, t := range threads {
		fmt.Fprintf(w, "%s\t%s\n", t.ID, t.LastActiveAt.Local().Format(time.DateTime))
	}
	return w.Flush()
}

func filePut(ctx context.Context, c *client.Client, args []string) error {
	thread, local := args[0], args[1]
	name := path.Base(local)
	if len(args) == 3 {
		name = args[2]
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := c.PutFile(ctx, thread, name, f)
	if err != nil {
		return err
	}
	fmt.Printf("%s  %d bytes  sha256 %s\n", st.Name, st.Size, st.SHA256)
	return nil
}

func fileGet(ctx context.Context, c *client.Client, args []string) error {
	thread, name := args[0], args[1]
	local := path.Base(name)
	if len(args) == 3 {
		local = args[2]
	}
	w := os.Stdout
	if local != "-" {
		f, err := os.Create(local)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return c.GetFile(ctx, thread, name, w)
}

func execGet(ctx context.Context, c *client.Client, id string) error {
	ex, err := c.Get(ctx, id, 0)
	if err != nil {
		return err
	}
	return printJSON(ex)
}

func execCancel(ctx context.Context, c *client.Client, id string) error {
	ex, err := c.Cancel(ctx, id)
	if err != nil {
		return err
	}
	return printJSON(ex)
}

func printJSON(v any) error {
	enc := encjson.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
