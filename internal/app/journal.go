package app

import "github.com/codeinterp/codeinterp/sandbox/journal"

// journal returns the journal of the sandbox operations of actor (a worker or janitor
// id), or nil unless CODEINTERP_SANDBOX_JOURNAL asks for one: the fault suite checks
// from it that no two workers acted on a thread's sandbox at once.
func (a *App) journal(actor string) *journal.Journal {
	if a.Config.SandboxJournal == "" {
		return nil
	}
	j := journal.New(a.Config.SandboxJournal, actor)
	j.OnError = func(err error) { a.Logger.Error("sandbox journal", "err", err) }
	return j
}
