package translog

import (
	"io"
	"log/slog"
)

// quietLogger keeps expected torn-tail warnings out of test output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
