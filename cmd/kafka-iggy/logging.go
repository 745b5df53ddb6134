package main

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// newLogger builds the process logger from cfg, writing to w (standard
// error in main). It is the only logger the sidecar creates: main passes it
// (or children made with With) to every constructor; nothing uses a global
// logger. cfg must have passed Validate; an unknown level falls back to
// info and an unknown format to JSON.
//
// JSON lines carry "time" (RFC 3339 with nanoseconds, UTC), "level" and
// "message", plus the fields of each line: stable snake_case keys such as
// component, conn_id, api_key, api_version, corr_id, close_reason and
// iggy_code. Secrets never reach a log line: the configuration is logged
// through Config.MarshalZerologObject, which masks them.
func newLogger(cfg LogConfig, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(strings.ToLower(cfg.Level))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	if cfg.Format == LogFormatConsole {
		cw := zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
		return zerolog.New(cw).Level(level).With().Timestamp().Logger()
	}
	// The timestamp is added by a hook rather than through
	// zerolog.TimeFieldFormat, a package global this function must not
	// change.
	return zerolog.New(w).Level(level).Hook(timeHook{})
}

// timeHook adds "time" in RFC 3339 with nanoseconds, UTC.
type timeHook struct{}

// Run adds the timestamp to every event that is written.
func (timeHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(time.RFC3339Nano))
}

// isTerminal reports whether w is a terminal (colour only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
