package worker

import (
	"fmt"
	"log/slog"
	"os"
)

// AsynqLogger adapts slog to asynq's logger.
type AsynqLogger struct{ L *slog.Logger }

func (a AsynqLogger) Debug(args ...any) { a.L.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a AsynqLogger) Info(args ...any)  { a.L.Info(fmt.Sprint(args...), "component", "asynq") }
func (a AsynqLogger) Warn(args ...any)  { a.L.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a AsynqLogger) Error(args ...any) { a.L.Error(fmt.Sprint(args...), "component", "asynq") }

// Fatal logs and exits, as asynq expects of it.
func (a AsynqLogger) Fatal(args ...any) {
	a.L.Error(fmt.Sprint(args...), "component", "asynq")
	os.Exit(1)
}
