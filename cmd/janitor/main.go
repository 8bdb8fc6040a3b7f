// Command janitor reclaims what executions leave behind. For now it only validates
// its configuration and exits; the sweeps (idle and orphaned sandboxes, expired
// artifacts and records) arrive with the sandbox lifecycle work.
package main

import (
	"fmt"
	"os"

	"github.com/codeinterp/codeinterp/internal/config"
)

func main() {
	cfg, err := config.Load(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "janitor:", err)
		os.Exit(1)
	}
	cfg.Logger().Info("janitor: no sweeps yet; exiting")
}
