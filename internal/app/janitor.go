package app

import (
	"github.com/codeinterp/codeinterp/internal/janitor"
	"github.com/codeinterp/codeinterp/sandbox"
)

// Janitor builds the janitor of the host whose sandboxes host lists.
func (a *App) Janitor(host sandbox.Host) *janitor.Janitor {
	cfg := a.Config
	return janitor.New(janitor.Config{
		Records: a.Records, Threads: a.Threads, Sandboxes: host, Store: a.Store,
		ID: "janitor-" + cfg.WorkerID, IdlePause: cfg.IdlePause, IdleReap: cfg.IdleReap, Logger: a.Logger,
	})
}
